// Finds the program that starts harn-ls: harnState.server.path / server.args,
// else the Python extension's interpreter, else python3, else `harn-ls` on PATH.
import * as vscode from 'vscode';
import * as cp from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

export interface LaunchPlan {
  command: string;
  args: string[];
  cwd?: string;
  /** Where the program came from, for the log. */
  source: string;
}

export interface LaunchFailure {
  error: string;
  /** The interpreters that were tried and lacked harn_ls. */
  tried: string[];
}

const PY_ARGS = ['-m', 'harn_ls', 'serve'];
const HARN_LS_ARGS = ['serve'];

function expand(p: string, folder?: string): string {
  let out = p.trim();
  if (folder) { out = out.replace(/\$\{workspaceFolder\}/g, folder); }
  out = out.replace(/\$\{userHome\}/g, os.homedir());
  if (out === '~' || out.startsWith('~/')) { out = path.join(os.homedir(), out.slice(1)); }
  if (folder && (out.includes('/') || out.includes('\\')) && !path.isAbsolute(out)) { out = path.join(folder, out); }
  return out;
}

function isHarnLsProgram(p: string): boolean {
  return /^harn-ls(\.exe|\.cmd)?$/i.test(path.basename(p));
}

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) { continue; }
    const full = path.join(dir, name);
    try { fs.accessSync(full, fs.constants.X_OK); return full; } catch { /* next */ }
  }
  return undefined;
}

// Imports harn_ls (light) and only looks up the server's dependencies (importing them costs ~0.7 s).
const CHECK = [
  'import sys, importlib.util as u',
  'import harn_ls',
  'missing = [m for m in ("pygls", "lsprotocol") if u.find_spec(m) is None]',
  'missing and sys.exit("harn_ls is there but its dependencies are missing: " + ", ".join(missing))',
].join('\n');

/** True when the interpreter can run `-m harn_ls serve` (checked where the server will run). */
export function hasHarnLs(python: string, cwd: string | undefined, log: vscode.LogOutputChannel): Promise<boolean> {
  return new Promise(resolve => {
    cp.execFile(python, ['-c', CHECK], { cwd, timeout: 20000 }, (err, _out, stderr) => {
      if (err) {
        log.info(`${python}: cannot run harn_ls (${(stderr || err.message).trim().split('\n').pop()})`);
        resolve(false);
      } else {
        resolve(true);
      }
    });
  });
}

interface PythonExtensionApi {
  environments?: {
    getActiveEnvironmentPath?(resource?: vscode.Uri): { path: string } | undefined;
    resolveEnvironment?(env: { path: string } | string): Promise<{ executable?: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath?: vscode.Event<unknown>;
  };
  settings?: { getExecutionDetails?(resource?: vscode.Uri): { execCommand?: string[] } | undefined };
}

async function pythonExtension(): Promise<PythonExtensionApi | undefined> {
  const ext = vscode.extensions.getExtension<PythonExtensionApi>('ms-python.python');
  if (!ext) { return undefined; }
  try { return ext.isActive ? ext.exports : await ext.activate(); } catch { return undefined; }
}

/** The Python extension's selected interpreter for the folder, if the extension is installed. */
export async function pythonExtensionInterpreter(folder?: vscode.Uri): Promise<string | undefined> {
  const api = await pythonExtension();
  if (!api) { return undefined; }
  try {
    const env = api.environments?.getActiveEnvironmentPath?.(folder);
    if (env && api.environments?.resolveEnvironment) {
      const resolved = await api.environments.resolveEnvironment(env);
      const exe = resolved?.executable?.uri?.fsPath;
      if (exe) { return exe; }
    }
    if (env?.path) { return env.path; }
  } catch { /* older API below */ }
  try {
    const cmd = api.settings?.getExecutionDetails?.(folder)?.execCommand;
    if (cmd && cmd.length === 1) { return cmd[0]; }
  } catch { /* none */ }
  return undefined;
}

/** Subscribe to interpreter changes of the Python extension (no-op when it is absent). */
export async function onPythonInterpreterChange(listener: () => void): Promise<vscode.Disposable | undefined> {
  const api = await pythonExtension();
  return api?.environments?.onDidChangeActiveEnvironmentPath?.(() => listener());
}

export async function resolveLaunch(
  folder: vscode.WorkspaceFolder | undefined,
  log: vscode.LogOutputChannel,
): Promise<LaunchPlan | LaunchFailure> {
  const cfg = vscode.workspace.getConfiguration('harnState', folder?.uri);
  const cwd = folder?.uri.scheme === 'file' ? folder.uri.fsPath : undefined;
  const setPath = (cfg.get<string>('server.path') ?? '').trim();
  const setArgs = (cfg.get<string[]>('server.args') ?? []).filter(a => typeof a === 'string');

  if (setPath) {
    const program = expand(setPath, cwd);
    if (isHarnLsProgram(program)) {
      return { command: program, args: setArgs.length ? setArgs : HARN_LS_ARGS, cwd, source: 'harnState.server.path' };
    }
    if (setArgs.length) {
      return { command: program, args: setArgs, cwd, source: 'harnState.server.path + harnState.server.args' };
    }
    if (await hasHarnLs(program, cwd, log)) {
      return { command: program, args: PY_ARGS, cwd, source: 'harnState.server.path' };
    }
    return { error: `harnState.server.path is ${program}, but harn_ls cannot be imported by it.`, tried: [program] };
  }

  const tried: string[] = [];
  const candidates: Array<[string, string]> = [];
  const fromPythonExt = await pythonExtensionInterpreter(folder?.uri);
  if (fromPythonExt) { candidates.push([fromPythonExt, 'the Python extension\'s interpreter']); }
  candidates.push(['python3', 'python3 on PATH']);
  for (const [python, source] of candidates) {
    tried.push(python);
    if (await hasHarnLs(python, cwd, log)) {
      return { command: python, args: setArgs.length ? setArgs : PY_ARGS, cwd, source };
    }
  }
  const exe = onPath('harn-ls');
  if (exe) {
    return { command: exe, args: setArgs.length ? setArgs : HARN_LS_ARGS, cwd, source: 'harn-ls on PATH' };
  }
  return { error: 'harn_ls is not installed in any Python interpreter that was tried, and no harn-ls program is on PATH.', tried };
}

export function isFailure(x: LaunchPlan | LaunchFailure): x is LaunchFailure {
  return (x as LaunchFailure).error !== undefined;
}

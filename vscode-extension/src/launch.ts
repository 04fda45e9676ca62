// Finds the program that starts harn-ls. In this order:
//   1. harnState.server.path (+ server.args) when set;
//   2. an installed harn_ls: the Python extension's interpreter, then python3, if it imports harn_ls;
//   3. the harn-ls program on PATH;
//   4. the harn-ls this VSIX carries (bundled/libs) run by the Python extension's interpreter or
//      python3 (>= 3.11).
// No code from the opened folder ever runs: every Python is started isolated (-I: no script
// directory, no cwd, no PYTHON* variables, no user site-packages on sys.path) with its working
// directory in the extension's own folder, and in an untrusted workspace an interpreter that
// lives inside a workspace folder is not used at all.
import * as vscode from 'vscode';
import * as cp from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { setting } from './settings';

export interface LaunchPlan {
  command: string;
  args: string[];
  cwd: string;
  /** Where the program came from, for the log. */
  source: string;
}

export interface LaunchFailure {
  error: string;
  /** The interpreters that were tried and lacked harn_ls. */
  tried: string[];
}

/** The oldest Python harn-ls runs on (pyproject requires-python). */
export const MIN_PYTHON: [number, number] = [3, 11];
const PY_ARGS = ['-I', '-m', 'harn_ls', 'serve'];
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

/** Every executable `name` on PATH, in PATH order (relative entries skipped: they would mean the folder). */
function allOnPath(name: string): string[] {
  const out: string[] = [];
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir || !path.isAbsolute(dir)) { continue; }
    const full = path.join(dir, name);
    try {
      fs.accessSync(full, fs.constants.X_OK);
      if (fs.statSync(full).isFile() && !out.includes(full)) { out.push(full); }
    } catch { /* next */ }
  }
  return out;
}

function inside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!!rel && !rel.startsWith('..') && !path.isAbsolute(rel));
}

/**
 * The workspace folder that holds this program (as written or after following symlinks), if any.
 * A venv's python is a symlink to the system one, but it still runs the venv's site-packages:
 * both paths count.
 */
export function programInFolder(program: string, folders: readonly string[]): string | undefined {
  const found = path.isAbsolute(program) ? program : allOnPath(program)[0];
  if (!found) { return undefined; }
  const candidates = [path.resolve(found)];
  try { candidates.push(fs.realpathSync(found)); } catch { /* missing: nothing runs */ }
  for (const folder of folders) {
    let real = folder;
    try { real = fs.realpathSync(folder); } catch { /* keep */ }
    if (candidates.some(c => inside(c, folder) || inside(c, real))) { return folder; }
  }
  return undefined;
}

// Run isolated (-I). Prints one JSON line: the version, and whether harn_ls and the server's
// dependencies are importable (looked up, not imported: importing them costs ~0.7 s).
const CHECK = [
  'import sys, json, importlib.util as u',
  'def has(m):',
  '    try: return u.find_spec(m) is not None',
  '    except Exception: return False',
  'print(json.dumps({"version": list(sys.version_info[:2]), "harn_ls": all(has(m) for m in ("harn_ls", "pygls", "lsprotocol"))}))',
].join('\n');

interface PythonInfo { version: [number, number]; harnLs: boolean }

/** What the interpreter is (run isolated, from a directory outside every workspace folder). */
export function probePython(python: string, cwd: string, log: vscode.LogOutputChannel): Promise<PythonInfo | undefined> {
  return new Promise(resolve => {
    cp.execFile(python, ['-I', '-c', CHECK], { cwd, timeout: 20000 }, (err, out, stderr) => {
      if (err) {
        log.info(`${python}: cannot run (${(stderr || err.message).trim().split('\n').pop()})`);
        resolve(undefined);
        return;
      }
      try {
        const j = JSON.parse(out.trim().split('\n').pop() ?? '');
        resolve({ version: [j.version[0], j.version[1]], harnLs: !!j.harn_ls });
      } catch {
        log.info(`${python}: unexpected answer to the version check`);
        resolve(undefined);
      }
    });
  });
}

function versionOk(v: [number, number]): boolean {
  return v[0] > MIN_PYTHON[0] || (v[0] === MIN_PYTHON[0] && v[1] >= MIN_PYTHON[1]);
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

/** The harn-ls this VSIX carries: bundled/tool/serve.py puts only bundled/libs on sys.path. */
interface Bundle { bootstrap: string; pythons: string[] }

export function bundledServer(extensionPath: string): Bundle | undefined {
  const bootstrap = path.join(extensionPath, 'bundled', 'tool', 'serve.py');
  try {
    const manifest = JSON.parse(fs.readFileSync(path.join(extensionPath, 'bundled', 'libs', 'manifest.json'), 'utf8'));
    if (fs.existsSync(bootstrap) && Array.isArray(manifest.pythons)) {
      return { bootstrap, pythons: manifest.pythons.map(String) };
    }
  } catch { /* not a platform VSIX */ }
  return undefined;
}

export async function resolveLaunch(
  folder: vscode.WorkspaceFolder | undefined,
  log: vscode.LogOutputChannel,
  extensionPath: string,
): Promise<LaunchPlan | LaunchFailure> {
  const folderPath = folder?.uri.scheme === 'file' ? folder.uri.fsPath : undefined;
  // Never the workspace folder: a Python started there could import the folder's modules.
  const cwd = fs.existsSync(extensionPath) ? extensionPath : os.tmpdir();
  const folders = (vscode.workspace.workspaceFolders ?? []).filter(f => f.uri.scheme === 'file').map(f => f.uri.fsPath);
  const trusted = vscode.workspace.isTrusted;
  // restricted settings: in an untrusted workspace, the user's values only (settings.ts)
  const setPath = (setting<string>('server.path', folder?.uri) ?? '').trim();
  const setArgs = (setting<string[]>('server.args', folder?.uri) ?? []).filter(a => typeof a === 'string');
  const tried: string[] = [];

  /** False (with a log line) when the workspace is untrusted and the program lives in one of its folders. */
  const allowed = (program: string, what: string): boolean => {
    if (trusted) { return true; }
    const holder = programInFolder(program, folders);
    if (!holder) { return true; }
    log.warn(`Not using ${what} ${program}: it lives inside the workspace folder ${holder}, and the workspace is not trusted. ` +
      'Trust the workspace, or use an interpreter outside the folder.');
    tried.push(`${program} (inside the untrusted folder)`);
    return false;
  };

  if (setPath) {
    const program = expand(setPath, folderPath);
    if (!allowed(program, 'harnState.server.path')) {
      return { error: `harnState.server.path ${program} is inside the untrusted workspace folder, so it is not run.`, tried };
    }
    if (isHarnLsProgram(program)) {
      return { command: program, args: setArgs.length ? setArgs : HARN_LS_ARGS, cwd, source: 'harnState.server.path' };
    }
    if (setArgs.length) {
      const isPython = /^python[0-9.]*(\.exe)?$/i.test(path.basename(program));
      const args = !isPython || setArgs[0] === '-I' ? setArgs : ['-I', ...setArgs];
      return { command: program, args, cwd, source: 'harnState.server.path + harnState.server.args' };
    }
    const info = await probePython(program, cwd, log);
    if (info?.harnLs) {
      return { command: program, args: PY_ARGS, cwd, source: 'harnState.server.path' };
    }
    return { error: `harnState.server.path is ${program}, but harn_ls cannot be imported by it.`, tried: [program] };
  }

  /** The first `name` on PATH that may run here (in an untrusted workspace: not inside a folder). */
  const firstOnPath = (name: string): string | undefined => allOnPath(name).find(p => allowed(p, `${name} on PATH`));

  const candidates: Array<[string, string]> = [];
  const fromPythonExt = await pythonExtensionInterpreter(folder?.uri);
  if (fromPythonExt && allowed(fromPythonExt, 'the Python extension\'s interpreter')) {
    candidates.push([fromPythonExt, 'the Python extension\'s interpreter']);
  }
  const python3 = firstOnPath('python3');
  if (python3) { candidates.push([python3, 'python3 on PATH']); }
  const usable: Array<[string, string, [number, number]]> = [];
  for (const [python, source] of candidates) {
    tried.push(python);
    const info = await probePython(python, cwd, log);
    if (!info) { continue; }
    if (info.harnLs && versionOk(info.version)) {
      return { command: python, args: setArgs.length ? setArgs : PY_ARGS, cwd, source: `${source} (installed harn_ls)` };
    }
    usable.push([python, source, info.version]);
  }
  const exe = firstOnPath('harn-ls');
  if (exe) {
    return { command: exe, args: setArgs.length ? setArgs : HARN_LS_ARGS, cwd, source: 'harn-ls on PATH' };
  }
  const bundle = bundledServer(extensionPath);
  if (bundle) {
    for (const [python, source, v] of usable) {
      const tag = `${v[0]}.${v[1]}`;
      if (bundle.pythons.includes(tag)) {
        return { command: python, args: ['-I', bundle.bootstrap, 'serve'], cwd, source: `the bundled harn-ls, run by ${source} (Python ${tag})` };
      }
      log.info(`${python} is Python ${tag}; the bundled harn-ls is built for Python ${bundle.pythons.join(', ')}.`);
    }
    return {
      error: `The bundled harn-ls needs Python ${bundle.pythons.join(', ')}, and none was found (tried the Python extension's interpreter and python3 on PATH).`,
      tried,
    };
  }
  return { error: 'harn_ls is not installed in any Python interpreter that was tried, and no harn-ls program is on PATH.', tried };
}

export function isFailure(x: LaunchPlan | LaunchFailure): x is LaunchFailure {
  return (x as LaunchFailure).error !== undefined;
}

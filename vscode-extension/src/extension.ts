// Harn State: a thin VS Code client of the harn-ls language server.
// The server reads the project and does every action; this side shows views and forwards commands.
import * as vscode from 'vscode';
import { Connection } from './client';
import { ClientCommands, WAITING_URI } from './protocol';
import { openDocument, registerCommands } from './commands';
import { onPythonInterpreterChange } from './launch';
import { inertMessage, quoteValue } from './inert';
import { setting } from './settings';
import { StatusBar } from './status';
import { Trees } from './trees';
import { registerViewCommands } from './views';

let connection: Connection | undefined;
let noState = false;
let onNoStateChange: () => void = () => undefined;

function setNoState(value: boolean): void {
  void vscode.commands.executeCommand('setContext', 'harnState.noState', value);
  if (value !== noState) {
    noState = value;
    onNoStateChange();
  }
}

/** Sets `harnState.noState` when no workspace folder has a .harn/ directory (drives the welcome view). */
async function updateNoState(): Promise<void> {
  let found = false;
  for (const folder of vscode.workspace.workspaceFolders ?? []) {
    try {
      const st = await vscode.workspace.fs.stat(vscode.Uri.joinPath(folder.uri, '.harn'));
      if (st.type & vscode.FileType.Directory) { found = true; break; }
    } catch { /* absent */ }
  }
  setNoState(!found);
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel('Harn State', { log: true });
  const status = new StatusBar();
  context.subscriptions.push(log, status);

  let trees: Trees | undefined;
  log.info(`Harn State ${context.extension.packageJSON.version ?? ''} (${context.extensionPath})`);
  const conn = new Connection(log, {
    onTreeChanged: p => trees?.onTreeChanged(p),
    onHitlArrived: p => {
      const reqs = Array.isArray(p?.requests) ? p.requests : [];
      if (!reqs.length) { return; }
      const first = reqs[0];
      // kind and prompt are data from the project's event log: quoted, never a link
      const what = reqs.length === 1
        ? `${inertMessage(String(first.kind ?? 'request').replace('_', ' '), 40)} waiting for you: ${quoteValue(first.prompt || first.requestId, 120)}`
        : `${reqs.length} new requests waiting for you`;
      void vscode.window.showInformationMessage(`Harn: ${what}`, 'Open').then(pick => {
        if (pick === 'Open') {
          void vscode.commands.executeCommand(ClientCommands.open, reqs.length === 1 ? first.uri : WAITING_URI);
        }
      });
    },
    onLoading: p => status.loading(p),
    onStatus: p => {
      status.update(p);
      if (typeof p?.hasState === 'boolean') { setNoState(!p.hasState); }
    },
    onStarting: () => {
      status.starting();
      void vscode.commands.executeCommand('setContext', 'harnState.serverFailed', false);
    },
    onRunning: () => {
      void vscode.commands.executeCommand('setContext', 'harnState.serverFailed', false);
      trees?.refreshAll();
    },
    onFailed: reason => {
      status.failed(reason);
      void vscode.commands.executeCommand('setContext', 'harnState.serverFailed', true);
      trees?.refreshAll();
    },
  }, context.extensionPath);
  connection = conn;
  trees = new Trees(p => conn.tree(p), () => noState);
  onNoStateChange = () => trees?.refreshAll();
  context.subscriptions.push(trees, { dispose: () => void conn.dispose() });
  registerCommands(context, conn, trees, log);
  registerViewCommands(context, trees, log, uri => openDocument(uri));

  await updateNoState();
  const watcher = vscode.workspace.createFileSystemWatcher('**/.harn', false, true, false);
  context.subscriptions.push(
    watcher,
    watcher.onDidCreate(() => void updateNoState()),
    watcher.onDidDelete(() => void updateNoState()),
    vscode.workspace.onDidChangeWorkspaceFolders(() => { void updateNoState(); void conn.restart(); }),
    vscode.workspace.onDidChangeConfiguration(e => {
      if (e.affectsConfiguration('harnState.server')) {
        log.info('harnState.server settings changed: restarting harn-ls.');
        void conn.restart();
      } else if (e.affectsConfiguration('harnState')) {
        void conn.notifyConfiguration();
        if (e.affectsConfiguration('harnState.facts') || e.affectsConfiguration('harnState.transcripts')) { trees?.refreshAll(); }
      }
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      log.info('Workspace trusted: restarting harn-ls with probes enabled.');
      void conn.restart();
    }),
  );
  void onPythonInterpreterChange(() => {
    const set = setting<string>('server.path');
    if (!set) {
      log.info('Python interpreter changed: restarting harn-ls.');
      void conn.restart();
    }
  }).then(d => { if (d) { context.subscriptions.push(d); } });

  void conn.start();
}

export async function deactivate(): Promise<void> {
  await connection?.dispose();
  connection = undefined;
}

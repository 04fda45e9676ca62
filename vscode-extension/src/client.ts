// Owns the one LanguageClient: start, stop, restart; wires the custom notifications.
import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification, ExecuteCommandRequest, LanguageClient, LanguageClientOptions, MessageType, ResponseError,
  ServerOptions, ShowMessageNotification, ShowMessageParams, ShowMessageRequest, ShowMessageRequestParams, State, TransportKind,
} from 'vscode-languageclient/node';
import { inertMessage, noIcons } from './inert';
import { isFailure, resolveLaunch } from './launch';
import { harnSettings } from './settings';
import {
  ClientCommands, CommandArgs, CommandResults, Failure, HitlArrivedParams, InitializationOptions, LoadingParams, Methods, SCHEME, StatusParams, TreeChangedParams, TreeParams, TreeResult,
} from './protocol';

/**
 * A server command refuses or fails with a JSON-RPC error (-32803 RequestFailed, -32602
 * InvalidParams, -32800 RequestCancelled) whose `data` is the contract payload ({ok: false,
 * message, ...}); the server has shown the message already. That payload, or undefined for any
 * other error.
 */
export function failureOf(e: unknown): Failure | undefined {
  if (!(e instanceof ResponseError)) { return undefined; }
  const data = e.data as { ok?: unknown; message?: unknown } | undefined;
  return data && data.ok === false && typeof data.message === 'string' ? (data as Failure) : undefined;
}

export interface ConnectionEvents {
  onTreeChanged(params: TreeChangedParams): void;
  onStatus(params: StatusParams): void;
  /** How far a long piece of work is (harn/loading); the progress itself is shown by the language client. */
  onLoading?(params: LoadingParams): void;
  onHitlArrived?(params: HitlArrivedParams): void;
  onStarting(): void;
  onRunning(): void;
  onFailed(reason: string): void;
}

/** The notification call for an LSP message type. */
function notifier(type: MessageType): typeof vscode.window.showInformationMessage {
  return type === MessageType.Error ? vscode.window.showErrorMessage
    : type === MessageType.Warning ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
}

/**
 * window/showMessage and window/showMessageRequest, shown as vscode-languageclient shows them
 * except that the text is made inert first (a notification turns `[x](command:…)` into a live
 * link): registered on the client, these replace the library's own handlers.
 */
function showServerMessages(client: LanguageClient): void {
  client.onNotification(ShowMessageNotification.type, (p: ShowMessageParams) => {
    void notifier(p.type)(inertMessage(p.message));
  });
  client.onRequest(ShowMessageRequest.type, (p: ShowMessageRequestParams) =>
    notifier(p.type)(inertMessage(p.message), ...(p.actions ?? [])));
}

export class Connection implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private ready: Promise<LanguageClient | undefined> = Promise.resolve(undefined);
  private settleReady: ((c: LanguageClient | undefined) => void) | undefined;
  private queue: Promise<void> = Promise.resolve();
  private disposed = false;

  constructor(
    private readonly log: vscode.LogOutputChannel,
    private readonly events: ConnectionEvents,
    private readonly extensionPath: string,
  ) {}

  /** The running client, waiting for a start in progress; undefined when it is not running. */
  async running(): Promise<LanguageClient | undefined> {
    const c = await this.ready;
    return c && c.state === State.Running ? c : undefined;
  }

  async request<R>(method: string, params: unknown): Promise<R> {
    const c = await this.running();
    if (!c) { throw new Error('harn-ls is not running'); }
    return c.sendRequest<R>(method, params);
  }

  /** Tree children; none while the server is not running (the views then show their welcome text). */
  async tree(params: TreeParams): Promise<TreeResult | undefined> {
    const c = await this.running();
    return c ? c.sendRequest<TreeResult | undefined>(Methods.tree, params) : undefined;
  }

  /** workspace/executeCommand with the one typed argument the command takes (protocol.ts CommandArgs). */
  async execute<K extends keyof CommandArgs>(command: K, args: CommandArgs[K]): Promise<CommandResults[K] | undefined> {
    const c = await this.running();
    if (!c) { throw new Error('harn-ls is not running'); }
    try {
      return await (c.sendRequest(ExecuteCommandRequest.type, { command, arguments: [args] }) as Promise<CommandResults[K] | undefined>);
    } catch (e) {
      // a refusal is answered as before: its {ok: false, message} payload, shown by the caller
      const failure = failureOf(e);
      if (failure) { return failure as CommandResults[K]; }
      throw e;
    }
  }

  /**
   * Tells a running server that harnState.* settings changed (it pulls them with
   * workspace/configuration or reads them from the payload). Sent here rather than by
   * vscode-languageclient's `synchronize`, which races with the restart that a change
   * of harnState.server.* causes and then tries to start the stopping client again.
   */
  async notifyConfiguration(): Promise<void> {
    const c = this.client;
    if (!c || !c.isRunning()) { return; }
    const folder = vscode.workspace.workspaceFolders?.[0];
    try {
      await c.sendNotification(DidChangeConfigurationNotification.type, { settings: { harnState: harnSettings(folder?.uri) } });
    } catch (e) {
      this.log.warn(`workspace/didChangeConfiguration: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  start(): Promise<void> { this.arm(); return this.enqueue(() => this.doStart()); }
  stop(): Promise<void> { return this.enqueue(async () => { await this.doStop(); this.settle(undefined); }); }
  restart(): Promise<void> { this.arm(); return this.enqueue(async () => { await this.doStop(); await this.doStart(); }); }

  /** From now until the next start settles, requests wait for that start instead of failing. */
  private arm(): void {
    if (!this.settleReady) { this.ready = new Promise(r => { this.settleReady = r; }); }
  }

  private settle(c: LanguageClient | undefined): void {
    const s = this.settleReady;
    this.settleReady = undefined;
    if (s) { s(c); } else { this.ready = Promise.resolve(c); }
  }

  private enqueue(op: () => Promise<void>): Promise<void> {
    const next = this.queue.then(op, op);
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async doStart(): Promise<void> {
    if (this.disposed) { this.settle(undefined); return; }
    const settle = (c: LanguageClient | undefined) => this.settle(c);
    this.events.onStarting();
    const folder = vscode.workspace.workspaceFolders?.[0];
    if (!folder) {
      this.log.info('No folder is open: harn-ls is not started.');
      settle(undefined);
      this.events.onFailed('no folder is open');
      return;
    }
    const plan = await resolveLaunch(folder, this.log, this.extensionPath);
    if (isFailure(plan)) {
      this.log.error(`${plan.error} Tried: ${plan.tried.join(', ') || '(nothing)'}`);
      settle(undefined);
      this.events.onFailed('harn_ls is not installed');
      void this.notifyMissing(plan.error);
      return;
    }
    this.log.info(`Starting harn-ls: ${plan.command} ${plan.args.join(' ')} (from ${plan.source}; cwd ${plan.cwd})`);
    const serverOptions: ServerOptions = {
      command: plan.command,
      args: plan.args,
      transport: TransportKind.stdio,
      // PYTHONSAFEPATH: a `harn-ls` program (not started with -I) still keeps its script directory off sys.path.
      options: { cwd: plan.cwd, env: { ...process.env, PYTHONUNBUFFERED: '1', PYTHONSAFEPATH: '1' } },
    };
    const initializationOptions: InitializationOptions = {
      settings: { harnState: harnSettings(folder.uri) },
      workspaceTrusted: vscode.workspace.isTrusted,
      // harn-state: documents are shown rendered (preview.ts): keep their picture lines (inline SVG)
      pictures: true,
      clientCommands: [
        ClientCommands.open, ClientCommands.compareWithExisting, ClientCommands.approveHitl, ClientCommands.denyHitl,
        ClientCommands.answerHitl, ClientCommands.acceptHitl, ClientCommands.declineHitl, ClientCommands.finishHitl,
      ],
    };
    let client: LanguageClient | undefined;
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: 'file' }, { scheme: SCHEME }],
      workspaceFolder: folder,
      outputChannel: this.log,
      traceOutputChannel: this.log,
      initializationOptions,
      uriConverters: {
        // VS Code's default form percent-encodes '=' and '&' in a query
        // (harn-state:/recall.md?q%3Dx%26ns%3Dy); send harn-state: URIs as written.
        code2Protocol: uri => (uri.scheme === SCHEME ? uri.toString(true) : uri.toString()),
        protocol2Code: value => vscode.Uri.parse(value),
      },
      middleware: {
        // Server commands run from a lens or code action (Accept, Reject, ...): a refusal is a
        // ResponseError now; logged and put in the status bar as before, not a second error box
        // (the server has shown its message).
        executeCommand: async (command, args, next) => {
          if (!client) { return next(command, args); }
          try {
            return await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
          } catch (e) {
            const failure = failureOf(e);
            if (!failure) { return client.handleFailedRequest(ExecuteCommandRequest.type, undefined, e, undefined); }
            this.log.warn(`${command}: ${failure.message}`);
            void vscode.window.setStatusBarMessage(`Harn State: ${noIcons(command)} — ${noIcons(inertMessage(failure.message, 200))}`, 8000);
            return failure;
          }
        },
        workspace: {
          // The server pulls harnState.* with workspace/configuration: answer with the values this
          // extension reads (restricted ones never from an untrusted folder), not the library's copy.
          configuration: async (params, token, next) => {
            const answer = await next(params, token);
            if (!Array.isArray(answer)) { return answer; }
            return params.items.map((item, i) => (item.section === 'harnState'
              ? harnSettings(item.scopeUri ? vscode.Uri.parse(item.scopeUri) : folder.uri) : answer[i]));
          },
        },
      },
    };
    client = new LanguageClient('harnState', 'Harn State', serverOptions, clientOptions);
    client.onNotification(Methods.treeChanged, (p: TreeChangedParams) => this.events.onTreeChanged(p));
    client.onNotification(Methods.status, (p: StatusParams) => this.events.onStatus(p));
    client.onNotification(Methods.loading, (p: LoadingParams) => this.events.onLoading?.(p));
    client.onNotification(Methods.hitlArrived, (p: HitlArrivedParams) => this.events.onHitlArrived?.(p));
    showServerMessages(client);
    client.onDidChangeState(e => {
      if (e.newState === State.Stopped && this.client === client && !this.disposed) {
        this.events.onFailed('the server stopped');
      }
    });
    this.client = client;
    try {
      await client.start();
      const info = client.initializeResult?.serverInfo;
      this.log.info(`harn-ls is running: ${info?.name ?? 'harn-ls'} ${info?.version ?? '(version not reported)'}.`);
      settle(client);
      this.events.onRunning();
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      this.log.error(`harn-ls failed to start: ${msg}`);
      settle(undefined);
      this.events.onFailed(msg);
      void vscode.window.showErrorMessage(`Harn State: harn-ls failed to start (${inertMessage(msg)}).`, 'Show Log', 'Open Settings')
        .then(pick => this.handlePick(pick));
    }
  }

  private async doStop(): Promise<void> {
    const c = this.client;
    this.client = undefined;
    if (!c) { return; }
    try {
      if (c.isRunning()) { await c.stop(5000); }
    } catch (e) {
      this.log.warn(`Stopping harn-ls: ${e instanceof Error ? e.message : String(e)}`);
    }
    try { await c.dispose(2000); } catch { /* already gone */ }
  }

  private async notifyMissing(detail: string): Promise<void> {
    const pick = await vscode.window.showErrorMessage(
      `Harn State: ${inertMessage(detail)} Install it into your interpreter (\`python -m pip install harn-ls\`) ` +
      'or set "harnState.server.path" to a Python that has it (or to the harn-ls program).',
      'Open Settings', 'Show Log',
    );
    this.handlePick(pick);
  }

  private handlePick(pick: string | undefined): void {
    if (pick === 'Open Settings') {
      void vscode.commands.executeCommand('workbench.action.openSettings', 'harnState.server');
    } else if (pick === 'Show Log') {
      void vscode.commands.executeCommand(ClientCommands.showLog);
    }
  }

  async dispose(): Promise<void> {
    this.disposed = true;
    await this.stop();
  }
}

// Palette, tree-menu and inline commands. Each one gathers arguments in the UI
// and forwards to a server command (workspace/executeCommand); the server acts.
import * as vscode from 'vscode';
import type { Connection } from './client';
import {
  AcceptArgs, AnswerHitlArgs, ClientCommands, CompareArgs, Context, ForgetStageArgs, INDEX_URI, InvalidateFactArgs, MigrateArgs, ProbeArgs,
  RecallArgs, RejectArgs, RescanArgs, ResumeArgs, SCHEME, ServerCommands, TreeItemData, ViewName, WAITING_URI,
} from './protocol';
import type { Node, Trees } from './trees';
import { inertMessage, noIcons, quoteValue } from './inert';
import { openAsSetting, PreviewPanels } from './preview';

let panels: PreviewPanels | undefined;

/** Opens a harn-state: document rendered (setting harnState.documents.openAs), any other as Markdown source. */
export async function openDocument(uri: string | vscode.Uri, preview = true): Promise<unknown> {
  const u = typeof uri === 'string' ? vscode.Uri.parse(uri, true) : uri;
  if (u.scheme === SCHEME && panels && openAsSetting() === 'preview') {
    return panels.show(u);
  }
  return openSource(u, preview);
}

/** Opens a document as Markdown source in a text editor. */
export async function openSource(u: vscode.Uri, preview = true): Promise<vscode.TextEditor> {
  let doc = await vscode.workspace.openTextDocument(u);
  if (doc.languageId !== 'markdown' && u.scheme !== 'file') {
    doc = await vscode.languages.setTextDocumentLanguage(doc, 'markdown');
  }
  return vscode.window.showTextDocument(doc, { preview });
}

/** What a tree-menu command receives: the node it was invoked on (or, from code, a bare id). */
type ItemArg = Node | string | undefined;

/** The tree item a context-menu command was invoked on. */
function itemOf(arg: ItemArg): TreeItemData | undefined {
  return arg && typeof arg === 'object' && arg.kind === 'item' ? arg.item : undefined;
}

/**
 * A string field of the item's `data`: the argument object of its server command, which the
 * server sends explicitly ({id}, ForgetStageArgs, {requestId, ...}). Ids are never taken apart.
 */
function dataField(item: TreeItemData | undefined, field: string): string | undefined {
  const v = item?.data?.[field];
  return typeof v === 'string' && v ? v : undefined;
}

/** The id a server command wants: a bare id as given, else the item's `data.id`. */
export function idOf(arg: ItemArg): string | undefined {
  return typeof arg === 'string' ? (arg || undefined) : dataField(itemOf(arg), 'id');
}

/** ForgetStageArgs of a `checkpointStage` item, exactly as the server put them in its `data`. */
export function stageArgsOf(arg: ItemArg): ForgetStageArgs | undefined {
  const item = itemOf(arg);
  if (item?.contextValue !== Context.checkpointStage) { return undefined; }
  const pipeline = dataField(item, 'pipeline');
  const key = dataField(item, 'key');
  return pipeline && key ? { pipeline, key } : undefined;
}

/** The server's raw-text URI from CompareArgs (`harn-state:/proposals/<id>.md?file=...`), its query kept exactly as encoded. */
export function rawUriFromServer(uri: unknown): vscode.Uri | undefined {
  if (typeof uri !== 'string') { return undefined; }
  const m = /^harn-state:(\/proposals\/[^?#]+\.md)\?(file=[^#]*)$/.exec(uri);
  if (!m) { return undefined; }
  let path: string;
  try { path = decodeURIComponent(m[1]); } catch { return undefined; }
  return vscode.Uri.from({ scheme: SCHEME, path, query: m[2] });
}

function describeResult(result: unknown): string | undefined {
  const r = result as { message?: unknown; summary?: unknown } | undefined;
  if (typeof r?.message === 'string') { return r.message; }
  return typeof r?.summary === 'string' ? r.summary : undefined;
}

/** Wraps a command handler: a failure is logged and shown once, never thrown at VS Code. */
export function reportingFailures(log: vscode.LogOutputChannel) {
  return (what: string, fn: (...args: any[]) => Promise<unknown>) => async (...args: any[]) => {
    try {
      return await fn(...args);
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      log.error(`${what}: ${msg}`);
      void vscode.window.showErrorMessage(`Harn State: ${what} failed: ${inertMessage(msg)}`);
      return undefined;
    }
  };
}

export function registerCommands(
  context: vscode.ExtensionContext,
  conn: Connection,
  trees: Trees,
  log: vscode.LogOutputChannel,
): void {
  const run = reportingFailures(log);

  /** Server actions answer {ok, message, ...}; the server itself shows their messages. */
  const outcome = (what: string, res: unknown): boolean => {
    const r = res as { ok?: boolean; message?: string } | undefined;
    if (r && r.ok === false) {
      log.warn(`${what}: ${r.message ?? 'refused'}`);
      void vscode.window.setStatusBarMessage(noIcons(inertMessage(`Harn State: ${what} — ${r.message ?? 'refused'}`, 300)), 8000);
      return false;
    }
    log.info(`${what}: ${describeResult(res) ?? 'done'}`);
    return true;
  };

  const pickItem = async (view: ViewName, contextValue: string, placeHolder: string): Promise<string | undefined> => {
    const items = await trees.collect(view, contextValue);
    if (!items.length) {
      void vscode.window.showInformationMessage(`Harn State: nothing to choose (${placeHolder.toLowerCase()}).`);
      return undefined;
    }
    const pick = await vscode.window.showQuickPick(
      items.map(it => ({ label: noIcons(it.label), description: noIcons(it.description), detail: noIcons(it.tooltip?.split('\n')[0]), it })),
      { placeHolder, matchOnDescription: true, matchOnDetail: true },
    );
    return pick ? dataField(pick.it, 'id') : undefined;
  };

  const reg = (id: string, what: string, fn: (...args: any[]) => Promise<unknown>) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, run(what, fn)));

  panels = new PreviewPanels(u => openSource(u, false), log);
  context.subscriptions.push(panels);
  reg(ClientCommands.openSource, 'Open source', async (uri?: string | vscode.Uri) => {
    const u = uri ? (typeof uri === 'string' ? vscode.Uri.parse(uri, true) : uri) : vscode.window.activeTextEditor?.document.uri;
    return u ? openSource(u, false) : undefined;
  });

  context.subscriptions.push(
    vscode.commands.registerCommand(ClientCommands.showLog, () => log.show(true)),
    vscode.commands.registerCommand(ClientCommands.restartServer, () => conn.restart()),
  );

  reg(ClientCommands.openDocument, 'Open', async (uri: string | vscode.Uri) => openDocument(uri));
  reg(ClientCommands.open, 'Open', async (uri: string | vscode.Uri) => openDocument(uri));

  // "Compare with existing": the file on disk vs the exact text Accept would write, as the
  // server serves it raw (`?file=`, CompareArgs.uri). Never text parsed out of a rendered document.
  reg(ClientCommands.compareWithExisting, 'Compare with existing', async (arg?: CompareArgs) => {
    const right = rawUriFromServer(arg?.uri);
    if (!arg || typeof arg.id !== 'string' || typeof arg.path !== 'string' || !right) {
      throw new Error('needs {id, path, uri} (uri: harn-state:/proposals/<id>.md?file=...)');
    }
    const existing = vscode.Uri.file(arg.path);
    return vscode.commands.executeCommand('vscode.diff', existing, right, `${vscode.workspace.asRelativePath(existing)} ↔ proposal ${arg.id}`);
  });
  reg(ClientCommands.openIndex, 'Open index', async () => openDocument(INDEX_URI));
  reg(ClientCommands.openWaiting, 'Open requests waiting for you', async () => openDocument(WAITING_URI));

  reg(ClientCommands.openItem, 'Open', async (arg: ItemArg) => {
    const item = itemOf(arg);
    if (item?.uri) { return openDocument(item.uri); }
    if (item?.command) { return vscode.commands.executeCommand(item.command.command, ...(item.command.arguments ?? [])); }
    return undefined;
  });

  reg(ClientCommands.rescan, 'Rescan', async () => {
    const args: RescanArgs = {};
    const res = await conn.execute(ServerCommands.rescan, args);
    outcome('rescan', res);
    trees.refreshAll();
  });

  reg(ClientCommands.recall, 'Recall', async (query?: string, namespace?: string) => {
    if (typeof query !== 'string' || !query.trim()) {
      query = await vscode.window.showInputBox({
        title: 'Harn State: Recall Memory',
        prompt: 'Search the agent\'s memory with Harn\'s own ranking',
        placeHolder: 'e.g. retry policy for flaky tests',
        ignoreFocusOut: true,
      });
    }
    if (!query || !query.trim()) { return undefined; }
    const args: RecallArgs = { query: query.trim() };
    if (typeof namespace === 'string' && namespace) { args.namespace = namespace; }
    const res = await conn.execute(ServerCommands.recall, args);
    if (typeof res?.uri !== 'string') { throw new Error('the server returned no document'); }
    return openDocument(res.uri, false);
  });

  reg(ClientCommands.probeTypecheck, 'Typecheck probe', async () => {
    const editor = vscode.window.activeTextEditor;
    if (!editor) { throw new Error('open a file and select the code to probe'); }
    const doc = editor.document;
    const sel = editor.selection.isEmpty
      ? new vscode.Range(doc.lineAt(0).range.start, doc.lineAt(doc.lineCount - 1).range.end)
      : editor.selection;
    if (doc.isDirty) { await doc.save(); }
    const args: ProbeArgs = {
      uri: doc.uri.toString(),
      range: {
        start: { line: sel.start.line, character: sel.start.character },
        end: { line: sel.end.line, character: sel.end.character },
      },
    };
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: 'Harn typecheck probe' },
      () => conn.execute(ServerCommands.probeTypecheck, args),
    );
    const msg = describeResult(result) ?? 'done';
    log.info(`Typecheck probe on ${doc.uri.toString()} ${sel.start.line + 1}:${sel.start.character + 1}-${sel.end.line + 1}:${sel.end.character + 1}: ${msg}`);
    void vscode.window.setStatusBarMessage(noIcons(inertMessage(`Harn probe: ${msg}`, 300)), 8000);
    return result;
  });

  reg(ClientCommands.acceptProposal, 'Accept proposal', async (arg?: ItemArg) => {
    const id = idOf(arg) ?? await pickItem('skills', Context.proposal, 'Pending proposal to accept');
    if (!id) { return undefined; }
    const args: AcceptArgs = { id };
    const res = await conn.execute(ServerCommands.acceptProposal, args);
    if (outcome(`accept proposal ${id}`, res)) { trees.refresh('skills'); }
    return res;
  });

  reg(ClientCommands.rejectProposal, 'Reject proposal', async (arg?: ItemArg, daysArg?: number) => {
    const id = idOf(arg) ?? await pickItem('skills', Context.proposal, 'Pending proposal to reject');
    if (!id) { return undefined; }
    let days = typeof daysArg === 'number' ? daysArg : undefined;
    if (days === undefined) {
      const input = await vscode.window.showInputBox({
        title: noIcons(inertMessage(`Reject proposal ${id}`, 200)),
        prompt: 'Suppress this proposal for how many days?',
        value: '14',
        validateInput: v => (/^\d+$/.test(v.trim()) && Number(v) > 0 ? undefined : 'A whole number of days, at least 1'),
      });
      if (input === undefined) { return undefined; }
      days = Number(input.trim());
    }
    const args: RejectArgs = { id, days };
    const res = await conn.execute(ServerCommands.rejectProposal, args);
    if (outcome(`reject proposal ${id} for ${days} days`, res)) { trees.refresh('skills'); }
    return res;
  });

  reg(ClientCommands.invalidateFact, 'Invalidate fact', async (arg?: ItemArg) => {
    const id = idOf(arg);
    if (!id) { throw new Error('choose a fact in the Memory & Facts view'); }
    const label = itemOf(arg)?.label ?? id;
    const ok = await vscode.window.showWarningMessage(
      `Invalidate the fact ${quoteValue(label)}? Harn will no longer use it.`, { modal: true }, 'Invalidate');
    if (ok !== 'Invalidate') { return undefined; }
    const args: InvalidateFactArgs = { id };
    const res = await conn.execute(ServerCommands.invalidateFact, args);
    if (outcome(`invalidate fact ${id}`, res)) { trees.refresh('memory'); }
    return res;
  });

  reg(ClientCommands.forgetCheckpointStage, 'Forget checkpoint stage', async (arg?: ItemArg) => {
    const stage = stageArgsOf(arg);
    if (!stage) { throw new Error('choose a stage in the Checkpoints view'); }
    const ok = await vscode.window.showWarningMessage(
      `Forget stage ${quoteValue(stage.key)} of pipeline ${quoteValue(stage.pipeline)}? The next run recomputes it.`, { modal: true }, 'Forget');
    if (ok !== 'Forget') { return undefined; }
    const res = await conn.execute(ServerCommands.forgetCheckpointStage, stage);
    if (outcome(`forget stage ${stage.pipeline}/${stage.key}`, res)) { trees.refresh('checkpoints'); }
    return res;
  });

  reg(ClientCommands.migratePatternLearning, 'Migrate pattern-learning state', async () => {
    const args: MigrateArgs = {};
    const res = await conn.execute(ServerCommands.migratePatternLearning, args);
    if (outcome('migrate pattern-learning state', res)) { trees.refreshAll(); }
    return res;
  });

  reg(ClientCommands.resumeEscalation, 'Resume escalation', async (arg?: ItemArg) => {
    const requestId = dataField(itemOf(arg), 'requestId');
    if (!requestId) { throw new Error('choose an escalation under "Waiting for you" in the Runs view'); }
    if (!vscode.workspace.isTrusted) { throw new Error('resuming runs the harn binary; trust this workspace first'); }
    const reviewer = vscode.workspace.getConfiguration('harnState').get<string>('hitl.reviewer') || 'your user name';
    const reason = await vscode.window.showInputBox({
      title: noIcons(inertMessage(`Resume escalation ${requestId}`, 200)),
      prompt: `harn orchestrator resume records you as ${quoteValue(reviewer)} (setting harnState.hitl.reviewer). Reason (optional):`,
      ignoreFocusOut: true,
    });
    if (reason === undefined) { return undefined; }
    const args: ResumeArgs = { requestId, reason };
    const res = await conn.execute(ServerCommands.resumeEscalation, args);
    if (outcome(`resume escalation ${requestId}`, res)) { trees.refresh('runs'); }
    return res;
  });

  // Answering HITL requests (issue 33): from a "Waiting for you" item (its data) or a lens on the
  // request's document (its argument {requestId, kind, choices?}). The server appends Harn's rows.
  const hitlArg = (arg?: ItemArg | Record<string, unknown>): { requestId?: string; choices: string[] } => {
    if (arg && typeof arg === 'object' && !('kind' in arg && (arg.kind === 'item' || arg.kind === 'more'))) {
      const o = arg as Record<string, unknown>;
      if (typeof o.requestId === 'string') {
        return { requestId: o.requestId, choices: Array.isArray(o.choices) ? o.choices.filter(c => typeof c === 'string') as string[] : [] };
      }
    }
    const item = itemOf(arg as ItemArg);
    const raw = item?.data?.['choices'];
    return {
      requestId: typeof arg === 'string' ? arg : dataField(item, 'requestId'),
      choices: Array.isArray(raw) ? raw.filter(c => typeof c === 'string') as string[] : [],
    };
  };
  const reviewerName = (): string =>
    vscode.workspace.getConfiguration('harnState').get<string>('hitl.reviewer') || 'your OS user name';
  const answerHitl = async (action: string, arg: ItemArg | Record<string, unknown> | undefined): Promise<unknown> => {
    const { requestId, choices } = hitlArg(arg);
    if (!requestId) { throw new Error('choose a request under "Waiting for you" in the Runs view'); }
    if (!vscode.workspace.isTrusted) { throw new Error('answering writes to the event log; trust this workspace first'); }
    const args: AnswerHitlArgs = { requestId, action, reason: '' };
    const who = reviewerName();
    if (action === 'deny' || action === 'decline' || action === 'approve' || action === 'accept') {
      const reason = await vscode.window.showInputBox({
        title: noIcons(inertMessage(`${action[0].toUpperCase()}${action.slice(1)} as ${who}`, 200)),
        prompt: 'Reason (optional; recorded with your response). Your name is the harnState.hitl.reviewer setting.',
        ignoreFocusOut: true,
      });
      if (reason === undefined) { return undefined; }
      args.reason = reason;
    } else if (action === 'answer') {
      if (choices.length) {
        const pick = await vscode.window.showQuickPick(choices.map((label, i) => ({ label: noIcons(label), i })),
          { title: noIcons(inertMessage(`Answer as ${who}`, 200)), placeHolder: 'Choose the answer', ignoreFocusOut: true });
        if (!pick) { return undefined; }
        args.choice = pick.i;
      } else {
        const text = await vscode.window.showInputBox({
          title: noIcons(inertMessage(`Answer as ${who}`, 200)),
          prompt: 'Your answer (text; JSON when the question asks for a number, a boolean or an object)',
          ignoreFocusOut: true,
        });
        if (text === undefined) { return undefined; }
        args.answer = text;
      }
    }
    const res = await conn.execute(ServerCommands.answerHitl, args);
    if (outcome(`${action} request`, res)) { trees.refresh('runs'); }
    return res;
  };
  reg(ClientCommands.approveHitl, 'Approve', (arg?: ItemArg) => answerHitl('approve', arg));
  reg(ClientCommands.denyHitl, 'Deny', (arg?: ItemArg) => answerHitl('deny', arg));
  reg(ClientCommands.answerHitl, 'Answer', (arg?: ItemArg) => answerHitl('answer', arg));
  reg(ClientCommands.acceptHitl, 'Accept escalation', (arg?: ItemArg) => answerHitl('accept', arg));
  reg(ClientCommands.declineHitl, 'Decline escalation', (arg?: ItemArg) => answerHitl('decline', arg));
  reg(ClientCommands.finishHitl, 'Finish answer', (arg?: ItemArg) => answerHitl('finish', arg));
}

// Comparisons: checkpoint versions (History node) and two runs, as vscode.diff of
// harn-state: documents the server renders in a stable, comparable shape.
import * as vscode from 'vscode';
import type { Node, Trees } from './trees';
import { SCHEME, TreeItemData } from './protocol';
import { reportingFailures } from './commands';
import { noIcons } from './inert';

export const ViewCommands = {
  compareCheckpointWithPrevious: 'harnState.ui.compareCheckpointWithPrevious',
  compareRun: 'harnState.ui.compareRun',
} as const;

/** The tree item a context-menu command was invoked on (VS Code passes the node). */
function itemOf(arg: unknown): TreeItemData | undefined {
  const node = arg as Node | undefined;
  return node && typeof node === 'object' && node.kind === 'item' ? node.item : undefined;
}

/** A run item's id, as the server sends it in `data.id`. */
const runIdOf = (item: TreeItemData | undefined): string | undefined =>
  typeof item?.data?.id === 'string' ? item.data.id : undefined;

const enc = (s: string) => encodeURIComponent(s);

export function runDocUri(id: string, normalized = true): vscode.Uri {
  return vscode.Uri.parse(`${SCHEME}:/runs/${enc(id)}.md${normalized ? '?normalized=1' : ''}`, true);
}

export function compareUri(a: string, b: string): vscode.Uri {
  return vscode.Uri.parse(`${SCHEME}:/compare/${enc(a)}/${enc(b)}.md`, true);
}

export function registerViewCommands(
  context: vscode.ExtensionContext,
  trees: Trees,
  log: vscode.LogOutputChannel,
  open: (uri: vscode.Uri) => Promise<unknown>,
): void {
  const run = reportingFailures(log);
  const reg = (id: string, what: string, fn: (...args: any[]) => Promise<unknown>) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, run(what, fn)));

  reg(ViewCommands.compareCheckpointWithPrevious, 'Compare with previous', async (arg?: unknown) => {
    const item = itemOf(arg);
    const d = item?.data ?? {};
    const prev = typeof d.previousUri === 'string' ? d.previousUri : undefined;
    if (!item?.uri || !prev) { throw new Error('choose a checkpoint version (not the first) under History in the Checkpoints view'); }
    const title = `${String(d.pipeline ?? 'checkpoints')}: version ${String(d.previous ?? '?')} ↔ ${String(d.version ?? '?')}`;
    return vscode.commands.executeCommand('vscode.diff', vscode.Uri.parse(prev, true), vscode.Uri.parse(item.uri, true), title);
  });

  const pickRun = async (placeHolder: string, exclude?: string): Promise<string | undefined> => {
    const runs = (await trees.collect('runs', 'run', 0)).filter(r => runIdOf(r) !== undefined && runIdOf(r) !== exclude);
    if (!runs.length) {
      void vscode.window.showInformationMessage('Harn State: no other run to compare with.');
      return undefined;
    }
    const pick = await vscode.window.showQuickPick(
      runs.map(r => ({ label: noIcons(r.label), description: noIcons(r.description), detail: noIcons(r.tooltip), id: runIdOf(r) as string })),
      { placeHolder, matchOnDescription: true, matchOnDetail: true },
    );
    return pick?.id;
  };

  reg(ViewCommands.compareRun, 'Compare runs', async (arg?: unknown, other?: string) => {
    const item = itemOf(arg);
    const a = (typeof arg === 'string' ? arg : runIdOf(item)) ?? await pickRun('First run to compare');
    if (!a) { return undefined; }
    const b = typeof other === 'string' ? other : await pickRun(`Compare ${a} with…`, a);
    if (!b) { return undefined; }
    await vscode.commands.executeCommand('vscode.diff', runDocUri(a), runDocUri(b), `Run ${a} ↔ ${b}`);
    return open(compareUri(a, b));
  });
}

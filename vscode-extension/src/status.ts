// Status bar item fed by the server's harn/status notification; click opens the index.
import * as vscode from 'vscode';
import { ClientCommands, LoadingParams, StatusParams } from './protocol';

/** Counts shown in the bar itself, in this order, when the server reports them. */
const SHOWN: Array<[string, string]> = [
  ['runs', 'run'],
  ['facts', 'fact'],
  ['proposals', 'proposal'],
  ['pending', 'proposal'],
  ['skills', 'skill'],
];

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('harnState.status', vscode.StatusBarAlignment.Left, 10);

  constructor() {
    this.item.name = 'Harn State';
    this.item.command = ClientCommands.openIndex;
    this.starting();
  }

  starting(): void {
    this.item.text = '$(loading~spin) Harn';
    this.item.tooltip = 'Harn State: starting harn-ls…';
    this.item.backgroundColor = undefined;
    this.item.show();
  }

  /** While the server loads a project or builds its recall index: "Harn loading 42 %". The
   *  progress notification itself is the language client's (LSP work-done progress). */
  loading(p: LoadingParams): void {
    // the settle's cache write is upkeep, not something to wait for: the bar keeps the counts
    if (p.title.includes('saving the state cache')) { return; }
    if (p.done) {
      if (this.lastStatus) { this.update(this.lastStatus); }
      return;
    }
    const pct = typeof p.percentage === 'number' ? ` ${p.percentage} %` : '';
    const what = p.title.startsWith('Harn: recall') ? 'indexing' : 'loading';
    this.item.text = `$(loading~spin) Harn ${what}${pct}`;
    const md = new vscode.MarkdownString(undefined, true);
    md.appendText(p.title); // server text naming a folder: plain text, never Markdown or a link
    if (p.message) { md.appendMarkdown('\n\n'); md.appendText(p.message); }
    this.item.tooltip = md;
    this.item.show();
  }

  failed(reason: string): void {
    this.item.text = '$(error) Harn';
    this.item.tooltip = `Harn State: harn-ls is not running — ${reason}`;
    this.item.command = ClientCommands.showLog;
    this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
    this.item.show();
  }

  private lastStatus: StatusParams | undefined;

  update(status: StatusParams): void {
    this.lastStatus = status;
    const counts = status?.counts ?? {};
    const problems = status?.problems ?? 0;
    const parts: string[] = [];
    const seen = new Set<string>();
    for (const [key, word] of SHOWN) {
      const n = counts[key];
      if (typeof n === 'number' && !seen.has(word)) {
        parts.push(plural(n, word));
        seen.add(word);
      }
    }
    const icon = status?.watching ? '$(eye)' : '$(eye-closed)';
    let text = `${icon} Harn`;
    const waiting = counts['hitlPending'];
    if (typeof waiting === 'number' && waiting > 0) { text += ` $(bell-dot) ${waiting} waiting`; }
    if (parts.length) { text += ` ${parts.join(' · ')}`; }
    if (problems) { text += ` $(warning) ${problems}`; }
    this.item.text = text;
    this.item.command = ClientCommands.openIndex;
    this.item.backgroundColor = problems ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;

    const md = new vscode.MarkdownString(undefined, true);
    md.isTrusted = false; // no command links, whatever the server sends
    md.supportHtml = false;
    md.appendMarkdown(`**Harn State** — ${status?.watching ? 'watching for changes' : 'not watching'}\n\n`);
    if (status?.root) { md.appendMarkdown('Root: '); md.appendText(status.root); md.appendMarkdown('\n\n'); }
    const rows = Object.entries(counts);
    if (rows.length) {
      md.appendMarkdown('| | |\n|---|---:|\n');
      for (const [k, v] of rows) {
        md.appendMarkdown('| ');
        md.appendText(String(k).replace(/\|/g, ' ')); // a cell: appendText escapes Markdown, `|` would end it
        md.appendMarkdown(` | ${typeof v === 'number' ? v : '?'} |\n`);
      }
      md.appendMarkdown('\n');
    }
    md.appendMarkdown(problems ? `$(warning) ${plural(problems, 'data problem')}\n\n` : 'No data problems\n\n');
    for (const w of status?.warnings ?? []) {
      md.appendMarkdown('$(warning) ');
      md.appendText(w); // server text (it can name settings and paths): shown as plain text
      md.appendMarkdown('\n\n');
    }
    if (status && !status.recallReady) { md.appendMarkdown('Recall index: still building\n\n'); }
    if (typeof waiting === 'number' && waiting > 0) {
      md.appendMarkdown(`$(bell-dot) ${plural(waiting, 'request')} waiting for a human\n\n`);
    }
    md.appendMarkdown('Click to open the index.');
    this.item.tooltip = md;
    this.item.show();
  }

  dispose(): void {
    this.item.dispose();
  }
}

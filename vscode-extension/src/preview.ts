// Rendered harn-state: documents.
//
// The built-in Markdown preview cannot follow our links: its webview only
// lets http(s)/mailto/vscode links out, and sanitises hrefs of unknown
// schemes away, so `harn-state:` and `file:` links are dead there. This panel
// renders the same Markdown with the built-in renderer (`markdown.api.render`)
// inside our own webview with a strict CSP (no remote content, only our nonce
// script, images only as data: URIs), and routes link clicks back here.
import * as vscode from 'vscode';
import { inertMessage, quoteValue } from './inert';
import { SCHEME } from './protocol';

export type OpenAs = 'preview' | 'source';

export function openAsSetting(): OpenAs {
  const v = vscode.workspace.getConfiguration('harnState').get<string>('documents.openAs', 'preview');
  return v === 'source' ? 'source' : 'preview';
}

function nonce(): string {
  const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let s = '';
  for (let i = 0; i < 32; i++) { s += chars.charAt(Math.floor(Math.random() * chars.length)); }
  return s;
}

function titleOf(uri: vscode.Uri): string {
  const base = decodeURIComponent(uri.path.split('/').pop() ?? uri.path).replace(/\.md$/, '');
  const kind = uri.path.split('/')[1] ?? '';
  return kind && kind !== `${base}.md` && kind !== base ? `${kind}: ${base}` : base;
}

/** file:///abs/path#L12 or #L12-L20 → an editor with that range selected. */
async function openFileLink(u: vscode.Uri): Promise<void> {
  const m = /^L(\d+)(?:-L?(\d+))?$/.exec(u.fragment);
  const target = u.with({ fragment: '' });
  const opts: vscode.TextDocumentShowOptions = { preview: true, viewColumn: vscode.ViewColumn.One };
  if (m) {
    const start = Math.max(0, Number(m[1]) - 1);
    const end = Math.max(start, Number(m[2] ?? m[1]) - 1);
    opts.selection = new vscode.Range(start, 0, end, 0);
  }
  await vscode.window.showTextDocument(target, opts);
}

export class PreviewPanels implements vscode.Disposable {
  private readonly panels = new Map<string, vscode.WebviewPanel>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly openSource: (uri: vscode.Uri) => Promise<unknown>,
    private readonly log: vscode.LogOutputChannel,
  ) {
    // The language client's content provider fires a change when the server asks for a refresh.
    this.disposables.push(vscode.workspace.onDidChangeTextDocument(e => {
      const key = e.document.uri.toString(true);
      if (e.document.uri.scheme === SCHEME && this.panels.has(key)) { void this.render(e.document.uri); }
    }));
  }

  /** Opens (or reveals and re-renders) the rendered view of a harn-state: URI. */
  async show(uri: vscode.Uri, preserveFocus = false): Promise<vscode.WebviewPanel> {
    const key = uri.toString(true);
    let panel = this.panels.get(key);
    if (panel) {
      panel.reveal(undefined, preserveFocus);
    } else {
      panel = vscode.window.createWebviewPanel('harnState.preview', titleOf(uri),
        { viewColumn: vscode.ViewColumn.Active, preserveFocus },
        { enableScripts: true, enableCommandUris: false, localResourceRoots: [], retainContextWhenHidden: false });
      this.panels.set(key, panel);
      const p = panel;
      p.onDidDispose(() => { if (this.panels.get(key) === p) { this.panels.delete(key); } });
      p.webview.onDidReceiveMessage(msg => void this.onMessage(uri, msg));
      // Re-read when shown again: the document may have changed while the panel was hidden.
      p.onDidChangeViewState(e => { if (e.webviewPanel.visible) { void this.render(uri); } });
    }
    await this.render(uri);
    return panel;
  }

  private async render(uri: vscode.Uri): Promise<void> {
    const panel = this.panels.get(uri.toString(true));
    if (!panel) { return; }
    let text: string;
    try {
      const doc = await vscode.workspace.openTextDocument(uri);
      text = doc.getText();
    } catch (e) {
      text = `# Cannot open ${uri.toString(true)}\n\n${e instanceof Error ? e.message : String(e)}\n`;
    }
    let body: string;
    try {
      body = (await vscode.commands.executeCommand<string>('markdown.api.render', text)) ?? '';
    } catch (e) {
      this.log.warn(`markdown.api.render failed: ${e instanceof Error ? e.message : String(e)}`);
      body = `<pre>${text.replace(/&/g, '&amp;').replace(/</g, '&lt;')}</pre>`;
    }
    panel.webview.html = this.page(panel.webview, body, uri);
  }

  private page(webview: vscode.Webview, body: string, uri: vscode.Uri): string {
    const n = nonce();
    const csp = [
      "default-src 'none'",
      'img-src data:',
      `style-src 'unsafe-inline' ${webview.cspSource}`,
      `script-src 'nonce-${n}'`,
    ].join('; ');
    const src = uri.toString(true).replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');
    return `<!DOCTYPE html>
<html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<style>
body { font-family: var(--vscode-markdown-font-family, var(--vscode-font-family)); font-size: var(--vscode-markdown-font-size, 14px);
  color: var(--vscode-foreground); background: var(--vscode-editor-background); padding: 0 26px 40px; line-height: 1.5; max-width: 1100px; }
a { color: var(--vscode-textLink-foreground); }
code { font-family: var(--vscode-editor-font-family); font-size: 0.92em; }
pre { background: var(--vscode-textCodeBlock-background); padding: 8px 12px; overflow-x: auto; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid var(--vscode-editorWidget-border, #8884); padding: 3px 8px; text-align: left; vertical-align: top; }
blockquote { border-left: 4px solid var(--vscode-textBlockQuote-border, #8888); margin: 8px 0; padding: 2px 12px; background: var(--vscode-textBlockQuote-background); }
details { margin: 4px 0 8px; border: 1px solid var(--vscode-editorWidget-border, #8884); border-radius: 4px; padding: 2px 8px; }
summary { cursor: pointer; }
img { max-width: 100%; }
.harn-toolbar { position: sticky; top: 0; background: var(--vscode-editor-background); padding: 6px 0; font-size: 12px; opacity: 0.8; }
</style></head>
<body data-source="${src}">
<div class="harn-toolbar"><a href="#" data-harn-source="1">Show Markdown source</a></div>
${body}
<script nonce="${n}">
const vscode = acquireVsCodeApi();
document.addEventListener('click', ev => {
  let a = ev.target;
  while (a && a.tagName !== 'A') { a = a.parentElement; }
  if (!a) { return; }
  if (a.dataset && a.dataset.harnSource) { ev.preventDefault(); vscode.postMessage({ type: 'source' }); return; }
  const href = a.getAttribute('href') || '';
  if (href.startsWith('#')) {
    const el = document.getElementById(decodeURIComponent(href.slice(1)));
    if (el) { el.scrollIntoView(); }
    ev.preventDefault();
    return;
  }
  ev.preventDefault();
  vscode.postMessage({ type: 'open', href });
}, true);
</script>
</body></html>`;
  }

  private async onMessage(from: vscode.Uri, msg: { type?: string; href?: string }): Promise<void> {
    try {
      if (msg?.type === 'source') { await this.openSource(from); return; }
      if (msg?.type !== 'open' || typeof msg.href !== 'string') { return; }
      const u = vscode.Uri.parse(msg.href, false);
      if (u.scheme === SCHEME) {
        // Same parsing as everywhere else: a harn-state: URI as the server wrote it.
        await this.show(vscode.Uri.parse(msg.href, true));
      } else if (u.scheme === 'file') {
        await openFileLink(u);
      } else if (u.scheme === 'http' || u.scheme === 'https') {
        // A link from project data: VS Code asks the user before it leaves the editor.
        await vscode.env.openExternal(u);
      } else {
        this.log.info(`Not following link ${msg.href} (scheme ${u.scheme})`);
      }
    } catch (e) {
      // the link comes from the rendered document (data): quoted, never a live link in the notification
      void vscode.window.showErrorMessage(`Harn State: cannot open ${quoteValue(msg.href)}: ${inertMessage(e instanceof Error ? e.message : String(e))}`);
    }
  }

  dispose(): void {
    for (const p of this.panels.values()) { p.dispose(); }
    this.panels.clear();
    for (const d of this.disposables) { d.dispose(); }
  }
}

// Tree views fed by the server's harn/tree request, refreshed on harn/treeChanged.
// The server decides what is in a view; this file only pages and caches it.
import * as vscode from 'vscode';
import {
  ClientCommands, TreeChangedParams, TreeItemData, TreeParams, TreeResult, VIEWS, ViewName, viewId,
} from './protocol';

export type TreeRequester = (params: TreeParams) => Promise<TreeResult | undefined>;

export interface ItemNode {
  kind: 'item';
  view: ViewName;
  key: string;
  item: TreeItemData;
  parent?: ItemNode;
}

export interface MoreNode {
  kind: 'more';
  view: ViewName;
  key: string;
  parent?: ItemNode;
  page: number;
}

interface ErrorNode {
  kind: 'error';
  view: ViewName;
  key: string;
  message: string;
}

export type Node = ItemNode | MoreNode | ErrorNode;

interface Listing {
  nodes: Node[];
}

/** A TreeResult; no answer (the server is not running) is an empty page. */
function normalise(result: TreeResult | undefined | null): TreeResult {
  return result ?? { items: [] };
}

function themeIcon(icon?: string): vscode.ThemeIcon | undefined {
  if (!icon) { return undefined; }
  const m = /^\$\((.+)\)$/.exec(icon.trim());
  const name = (m ? m[1] : icon).trim();
  const [id, color] = name.split('|');
  return color ? new vscode.ThemeIcon(id, new vscode.ThemeColor(color)) : new vscode.ThemeIcon(id);
}

class ViewProvider implements vscode.TreeDataProvider<Node> {
  private readonly emitter = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  private cache = new Map<string, Listing>();
  /** How many pages the user has loaded under a parent (kept across refreshes). */
  private pagesWanted = new Map<string, number>();
  private byItemId = new Map<string, ItemNode>();

  constructor(readonly view: ViewName, private readonly request: TreeRequester, private readonly hidden: () => boolean) {}

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.kind === 'more') {
      const ti = new vscode.TreeItem('Load more…', vscode.TreeItemCollapsibleState.None);
      ti.id = `${this.view}:${node.key}`;
      ti.iconPath = new vscode.ThemeIcon('ellipsis');
      ti.contextValue = 'loadMore';
      ti.command = { title: 'Load more', command: ClientCommands.loadMore, arguments: [node] };
      return ti;
    }
    if (node.kind === 'error') {
      const ti = new vscode.TreeItem(node.message, vscode.TreeItemCollapsibleState.None);
      ti.id = `${this.view}:${node.key}`;
      ti.iconPath = new vscode.ThemeIcon('warning');
      ti.contextValue = 'error';
      return ti;
    }
    const it = node.item;
    const ti = new vscode.TreeItem(
      it.label,
      it.hasChildren ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None,
    );
    ti.id = `${this.view}:${node.key}`;
    if (it.description) { ti.description = it.description; }
    if (it.tooltip) {
      // Markdown the server made (data in it escaped); untrusted: a command link in it would do nothing
      const md = new vscode.MarkdownString(it.tooltip);
      md.isTrusted = false;
      md.supportHtml = false;
      md.supportThemeIcons = true;
      ti.tooltip = md;
    }
    ti.iconPath = themeIcon(it.icon);
    ti.contextValue = it.contextValue;
    if (it.command) {
      ti.command = { title: it.command.title, command: it.command.command, arguments: it.command.arguments };
    } else if (it.uri) {
      ti.command = { title: 'Open', command: ClientCommands.openDocument, arguments: [it.uri] };
    }
    return ti;
  }

  getParent(node: Node): Node | undefined {
    return node.kind === 'error' ? undefined : node.parent;
  }

  async getChildren(parent?: Node): Promise<Node[]> {
    if (parent && parent.kind !== 'item') { return []; }
    // An empty root lets the welcome content (no .harn/) show instead of empty groups.
    if (!parent && this.hidden()) { return []; }
    const key = parent?.key ?? '';
    const cached = this.cache.get(key);
    if (cached) { return cached.nodes; }
    const nodes: Node[] = [];
    try {
      let page: number | undefined;
      let loaded = 0;
      const wanted = this.pagesWanted.get(key) ?? 1;
      for (;;) {
        const res = normalise(await this.request({ view: this.view, parent: parent?.item.id, ...(page !== undefined ? { page } : {}) }));
        nodes.push(...res.items.map(item => this.itemNode(item, parent)));
        loaded++;
        if (res.nextPage === undefined || res.nextPage === null) { break; }
        if (loaded >= wanted) {
          nodes.push({ kind: 'more', view: this.view, key: `${key}\u0000more:${res.nextPage}`, parent, page: res.nextPage });
          break;
        }
        page = res.nextPage;
      }
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      return [{ kind: 'error', view: this.view, key: `${key}\u0000error`, message: `Could not load: ${message}` }];
    }
    this.cache.set(key, { nodes });
    return nodes;
  }

  private itemNode(item: TreeItemData, parent?: ItemNode): ItemNode {
    const node: ItemNode = { kind: 'item', view: this.view, key: `${parent?.key ?? ''}\u0000${item.id}`, item, parent };
    this.byItemId.set(item.id, node);
    return node;
  }

  async loadMore(node: MoreNode): Promise<void> {
    const key = node.parent?.key ?? '';
    this.pagesWanted.set(key, (this.pagesWanted.get(key) ?? 1) + 1);
    const listing = this.cache.get(key);
    if (!listing) { this.emitter.fire(node.parent); return; }
    const res = normalise(await this.request({ view: this.view, parent: node.parent?.item.id, page: node.page }));
    const nodes = listing.nodes.filter(n => n !== node);
    nodes.push(...res.items.map(item => this.itemNode(item, node.parent)));
    if (res.nextPage !== undefined && res.nextPage !== null) {
      nodes.push({ kind: 'more', view: this.view, key: `${key}\u0000more:${res.nextPage}`, parent: node.parent, page: res.nextPage });
    }
    this.cache.set(key, { nodes });
    this.emitter.fire(node.parent);
  }

  /** The server said something under `id` (or anywhere in the view) changed. */
  changed(id?: string | null): void {
    const node = id ? this.byItemId.get(id) : undefined;
    if (node && node.item.hasChildren) {
      for (const k of [...this.cache.keys()]) {
        if (k === node.key || k.startsWith(node.key + '\u0000')) { this.cache.delete(k); }
      }
      this.emitter.fire(node);
      return;
    }
    this.refresh();
  }

  refresh(): void {
    this.cache.clear();
    this.byItemId.clear();
    this.emitter.fire(undefined);
  }

  /** Every loaded item node (for quick picks). */
  loadedItems(): ItemNode[] {
    return [...this.byItemId.values()];
  }
}

export class Trees implements vscode.Disposable {
  private readonly providers = new Map<ViewName, ViewProvider>();
  private readonly disposables: vscode.Disposable[] = [];
  readonly views = new Map<ViewName, vscode.TreeView<Node>>();

  constructor(private readonly request: TreeRequester, hidden: () => boolean = () => false) {
    for (const view of VIEWS) {
      const provider = new ViewProvider(view, request, hidden);
      this.providers.set(view, provider);
      const tv = vscode.window.createTreeView(viewId(view), { treeDataProvider: provider, showCollapseAll: view !== 'checkpoints' });
      this.views.set(view, tv);
      this.disposables.push(tv);
    }
    this.disposables.push(vscode.commands.registerCommand(ClientCommands.loadMore, (node: MoreNode) =>
      node?.kind === 'more' ? this.providers.get(node.view)?.loadMore(node) : undefined));
  }

  onTreeChanged(params: TreeChangedParams): void {
    const provider = params?.view ? this.providers.get(params.view) : undefined;
    if (provider) { provider.changed(params.id); } else { this.refreshAll(); }
  }

  refresh(view: ViewName): void {
    this.providers.get(view)?.refresh();
  }

  refreshAll(): void {
    for (const p of this.providers.values()) { p.refresh(); }
  }

  /** All items with the given contextValue in a view, walking groups one level deep if needed. */
  async collect(view: ViewName, contextValue: string, maxDepth = 2): Promise<TreeItemData[]> {
    const out: TreeItemData[] = [];
    const walk = async (parent: string | undefined, depth: number): Promise<void> => {
      let page: number | undefined;
      for (let guard = 0; guard < 50; guard++) {
        const res = normalise(await this.request({ view, parent, ...(page !== undefined ? { page } : {}) }));
        for (const item of res.items) {
          if (item.contextValue === contextValue) { out.push(item); } else if (item.hasChildren && depth < maxDepth) { await walk(item.id, depth + 1); }
        }
        if (res.nextPage === undefined || res.nextPage === null) { break; }
        page = res.nextPage;
      }
    };
    await walk(undefined, 0);
    return out;
  }

  dispose(): void {
    for (const d of this.disposables) { d.dispose(); }
  }
}

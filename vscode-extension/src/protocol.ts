// The harn-ls interface contract as the extension sees it (design.md, "LSP surface").
// Method names, command names and payload shapes live here and nowhere else.

export const SCHEME = 'harn-state';
export const INDEX_URI = 'harn-state:/index.md';

export const Methods = {
  tree: 'harn/tree',
  treeChanged: 'harn/treeChanged',
  status: 'harn/status',
  /** New requests waiting for a human (issue 16). */
  hitlArrived: 'harn/hitlArrived',
} as const;

/** Commands the server runs through workspace/executeCommand. */
export const ServerCommands = {
  acceptProposal: 'harnState.acceptProposal', // {id}
  rejectProposal: 'harnState.rejectProposal', // {id, days?}
  invalidateFact: 'harnState.invalidateFact', // {id}
  forgetCheckpointStage: 'harnState.forgetCheckpointStage', // {pipeline, key}
  probeTypecheck: 'harnState.probeTypecheck', // {uri, range}
  recall: 'harnState.recall', // {query, namespace?} -> {uri}
  migratePatternLearning: 'harnState.migratePatternLearning', // {}
  rescan: 'harnState.rescan', // {}
  resumeEscalation: 'harnState.resumeEscalation', // {requestId, reason?}: runs `harn orchestrator resume` (trusted only)
} as const;

/** Commands the extension contributes (package.json). */
export const ClientCommands = {
  restartServer: 'harnState.restartServer',
  showLog: 'harnState.showLog',
  openIndex: 'harnState.openIndex',
  openItem: 'harnState.openItem',
  openDocument: 'harnState.openDocument',
  /** Used by the server in tree items and code lenses: open a harn-state: URI (string argument). */
  open: 'harnState.open',
  /** Used by the server's "Compare with existing" code action: {id, path}. */
  compareWithExisting: 'harnState.compareWithExisting',
  loadMore: 'harnState.loadMore',
  rescan: 'harnState.ui.rescan',
  recall: 'harnState.ui.recall',
  probeTypecheck: 'harnState.ui.probeTypecheck',
  acceptProposal: 'harnState.ui.acceptProposal',
  rejectProposal: 'harnState.ui.rejectProposal',
  invalidateFact: 'harnState.ui.invalidateFact',
  forgetCheckpointStage: 'harnState.ui.forgetCheckpointStage',
  migratePatternLearning: 'harnState.ui.migratePatternLearning',
  resumeEscalation: 'harnState.ui.resumeEscalation',
  openWaiting: 'harnState.openWaiting',
} as const;

export type ViewName = 'runs' | 'checkpoints' | 'memory' | 'skills';
export const VIEWS: readonly ViewName[] = ['runs', 'checkpoints', 'memory', 'skills'];
export const viewId = (view: ViewName): string => `harnState.${view}`;

/** contextValue strings the server puts on tree items. */
export const Context = {
  proposal: 'proposal',
  proposalSuppressed: 'proposal.suppressed',
  fact: 'fact',
  checkpointStage: 'checkpointStage',
  checkpointFile: 'checkpointFile',
  run: 'run',
  transcript: 'transcript',
  namespace: 'namespace',
  memoryRecord: 'memoryRecord',
  skill: 'skill',
  skillLayer: 'skillLayer',
  group: 'group',
  hitlEscalation: 'hitlRequest.escalation',
} as const;

export interface HitlArrivedParams {
  root?: string;
  requests: Array<{ requestId: string; kind: string; prompt?: string; agent?: string; uri: string }>;
}

export const WAITING_URI = 'harn-state:/hitl.md';

export interface LspCommand {
  title: string;
  command: string;
  arguments?: unknown[];
}

export interface TreeParams {
  view: ViewName;
  parent?: string;
  page?: number;
}

export interface TreeItemData {
  id: string;
  label: string;
  description?: string;
  tooltip?: string;
  icon?: string;
  uri?: string;
  command?: LspCommand;
  contextValue?: string;
  hasChildren?: boolean;
  /** Optional structured arguments for the item's actions (e.g. {pipeline, key}). */
  data?: Record<string, unknown>;
}

export interface TreeResult {
  items: TreeItemData[];
  nextPage?: number | null;
}

export interface TreeChangedParams {
  view: ViewName;
  id?: string | null;
}

export interface StatusParams {
  root?: string | null;
  counts?: Record<string, number>;
  problems?: number | unknown[];
  watching?: boolean;
  /** False when the project has no .harn/ (nor run) directory. */
  hasState?: boolean;
}

/** The harnState.* settings sent in initializationOptions. */
export interface InitializationOptions {
  settings: { harnState: Record<string, unknown> };
  workspaceTrusted: boolean;
}

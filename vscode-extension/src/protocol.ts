// The harn-ls interface contract as the extension sees it (design.md, "LSP surface").
// Method names, command names and payload shapes live here and nowhere else in the extension.
// It mirrors harn_ls/contract.py; tests/unit/test_contract.py parses this file and fails when the
// two disagree. Keep its simple forms: `export const X = { key: 'value', ... } as const;` and
// `export interface X {` with one `field: type;` or `field?: type;` per line, closed by `}` alone.
// A field is optional (`?`) when the Python field has a default and either the client sends the
// class or the default is None; names are camelCase (Python's snake_case, converted).

export const SCHEME = 'harn-state';
export const INDEX_URI = 'harn-state:/index.md';

export const Methods = {
  tree: 'harn/tree',
  treeChanged: 'harn/treeChanged',
  status: 'harn/status',
  /** New requests waiting for a human (issue 16). */
  hitlArrived: 'harn/hitlArrived',
  /** How far a long piece of work is (a project load, the recall index build), for the status bar. */
  loading: 'harn/loading',
} as const;

/** Commands the server runs through workspace/executeCommand. */
export const ServerCommands = {
  acceptProposal: 'harnState.acceptProposal', // AcceptArgs -> AcceptResult | Failure
  rejectProposal: 'harnState.rejectProposal', // RejectArgs -> RejectResult | Failure
  invalidateFact: 'harnState.invalidateFact', // InvalidateFactArgs -> InvalidateFactResult | Failure
  forgetCheckpointStage: 'harnState.forgetCheckpointStage', // ForgetStageArgs -> ForgetStageResult | Failure
  probeTypecheck: 'harnState.probeTypecheck', // ProbeArgs -> ProbeResult | ProbeCancelled | Failure
  recall: 'harnState.recall', // RecallArgs -> RecallResult
  migratePatternLearning: 'harnState.migratePatternLearning', // MigrateArgs -> MigrateResult | Failure
  rescan: 'harnState.rescan', // RescanArgs -> RescanResult
  resumeEscalation: 'harnState.resumeEscalation', // ResumeArgs -> ResumeResult | ResumeFailure | Failure (trusted only)
  answerHitl: 'harnState.answerHitl', // AnswerHitlArgs -> AnswerHitlResult | Failure (trusted only)
} as const;

/** Commands the extension contributes (package.json). */
export const ClientCommands = {
  restartServer: 'harnState.restartServer',
  showLog: 'harnState.showLog',
  openIndex: 'harnState.openIndex',
  openItem: 'harnState.openItem',
  openDocument: 'harnState.openDocument',
  /** Open a harn-state: document as Markdown source (whatever harnState.documents.openAs says). */
  openSource: 'harnState.openSource',
  /** Used by the server in tree items and code lenses: open a harn-state: URI (string argument). */
  open: 'harnState.open',
  /** Used by the server's "Compare with existing" code action: CompareArgs. */
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
  approveHitl: 'harnState.ui.approveHitl',
  denyHitl: 'harnState.ui.denyHitl',
  answerHitl: 'harnState.ui.answerHitl',
  acceptHitl: 'harnState.ui.acceptHitl',
  declineHitl: 'harnState.ui.declineHitl',
  finishHitl: 'harnState.ui.finishHitl',
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

export const WAITING_URI = 'harn-state:/hitl.md';

// ------------------------------------------------------------------ command arguments (sent)
export interface AcceptArgs {
  id: string;
  skillRoot?: string | null;
  root?: string | null;
}

export interface RejectArgs {
  id: string;
  days?: number;
  root?: string | null;
}

export interface InvalidateFactArgs {
  id: string;
  root?: string | null;
}

/** Also the `data` of a `checkpointStage` tree item, passed on as it is. */
export interface ForgetStageArgs {
  pipeline: string;
  key: string;
  root?: string | null;
}

export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

export interface ProbeArgs {
  uri: string;
  range?: Range | null;
}

export interface RecallArgs {
  query?: string;
  namespace?: string | null;
}

export interface MigrateArgs {
  root?: string | null;
}

export interface RescanArgs {
}

export interface AnswerHitlArgs {
  requestId: string;
  action: string;
  reason?: string;
  answer?: string | null;
  choice?: number | null;
}

export interface ResumeArgs {
  requestId: string;
  reason?: string;
}

/** Argument of the ui.*Hitl client commands (lenses on a request's document): ask for a reason or an
 * answer (`choices`: a question's choices), then run answerHitl. */
export interface HitlFormArgs {
  requestId: string;
  kind: string;
  choices?: string[] | null;
}

/** Argument of compareWithExisting: the file at `path` vs `uri`, the server's raw text of what Accept writes. */
export interface CompareArgs {
  id: string;
  path: string;
  uri: string;
}

// ------------------------------------------------------------------- command results (received)
/** Any command that refuses or fails (the server has shown `message` already). */
export interface Failure {
  message: string;
  ok: false;
}

export interface AcceptResult {
  message: string;
  id: string;
  name: string;
  kind: string;
  written: string[];
  unchanged: string[];
  skillPath: string;
  skillUri: string;
  warning?: string | null;
  ok: true;
}

export interface RejectResult {
  message: string;
  id: string;
  name: string;
  suppressedUntil: string;
  ok: true;
}

export interface InvalidateFactResult {
  message: string;
  id: string;
  namespace: string;
  ok: true;
}

export interface ForgetStageResult {
  message: string;
  pipeline: string;
  key: string;
  remaining: string[];
  ok: true;
}

export interface MigrateResult {
  message: string;
  migrated: boolean;
  counts: Record<string, number>;
  problems: string[];
  ok: true;
}

export interface RecallResult {
  uri: string;
}

export interface RescanResult {
  counts: Record<string, Record<string, number>>;
  ok: true;
}

export interface ProbeResult {
  outcome: string;
  summary: string;
  factId: string | null;
  envelope: Record<string, unknown>;
  diagnostics: number;
  notes: string[];
  ok: true;
}

export interface ProbeCancelled {
  message: string;
  outcome: string;
  ok: false;
}

export interface ResumeResult {
  message: string;
  argv: string[];
  state?: string | null;
  ok: true;
}

export interface WrittenEvent {
  topic: string;
  eventId: number;
  kind: string;
}

export interface AnswerHitlResult {
  message: string;
  outcome: string;
  path: string;
  reviewer: string;
  written: WrittenEvent[];
  state?: string | null;
  ok: true;
}

export interface ResumeFailure {
  message: string;
  argv: string[];
  ok: false;
}

// ------------------------------------------------------------------- tree, status, notifications
export interface LspCommand {
  title: string;
  command: string;
  arguments: unknown[];
}

export interface TreeParams {
  view: ViewName;
  parent?: string | null;
  page?: number;
  root?: string | null;
  showSuppressed?: boolean;
}

export interface TreeItemData {
  id: string;
  label: string;
  description: string;
  tooltip: string;
  icon: string;
  contextValue: string;
  hasChildren: boolean;
  uri?: string | null;
  command?: LspCommand | null;
  /** The argument object of the item's server command (ForgetStageArgs for a checkpoint stage,
   * {id} for a proposal or fact, {requestId, ...} for a request waiting for a human). */
  data?: Record<string, unknown> | null;
}

export interface TreeResult {
  items: TreeItemData[];
  nextPage?: number | null;
  /** All items under the parent, sent when there is more than one page. */
  total?: number | null;
}

export interface TreeChangedParams {
  view: ViewName;
  id?: string | null;
}

export interface StatusParams {
  root: string;
  counts: Record<string, number>;
  problems: number;
  watching: boolean;
  recallReady: boolean;
  warnings: string[];
  /** False when the project has no .harn/ (nor run) directory. */
  hasState: boolean;
}

export interface LoadingParams {
  root: string;
  title: string;
  percentage: number | null;
  message: string;
  done: boolean;
}

export interface HitlRequestNote {
  requestId: string;
  kind: string;
  prompt: string;
  agent: string | null;
  uri: string;
}

export interface HitlArrivedParams {
  root: string;
  requests: HitlRequestNote[];
}

type SC = typeof ServerCommands;

/** The argument each server command takes (Connection.execute checks it at compile time). */
export type CommandArgs = {
  [K in SC[keyof SC]]:
    K extends SC['acceptProposal'] ? AcceptArgs :
    K extends SC['rejectProposal'] ? RejectArgs :
    K extends SC['invalidateFact'] ? InvalidateFactArgs :
    K extends SC['forgetCheckpointStage'] ? ForgetStageArgs :
    K extends SC['probeTypecheck'] ? ProbeArgs :
    K extends SC['recall'] ? RecallArgs :
    K extends SC['migratePatternLearning'] ? MigrateArgs :
    K extends SC['rescan'] ? RescanArgs :
    K extends SC['resumeEscalation'] ? ResumeArgs :
    K extends SC['answerHitl'] ? AnswerHitlArgs : never;
};

/** What each server command answers. */
export type CommandResults = {
  [K in SC[keyof SC]]:
    K extends SC['acceptProposal'] ? AcceptResult | Failure :
    K extends SC['rejectProposal'] ? RejectResult | Failure :
    K extends SC['invalidateFact'] ? InvalidateFactResult | Failure :
    K extends SC['forgetCheckpointStage'] ? ForgetStageResult | Failure :
    K extends SC['probeTypecheck'] ? ProbeResult | ProbeCancelled | Failure :
    K extends SC['recall'] ? RecallResult :
    K extends SC['migratePatternLearning'] ? MigrateResult | Failure :
    K extends SC['rescan'] ? RescanResult :
    K extends SC['resumeEscalation'] ? ResumeResult | ResumeFailure | Failure :
    K extends SC['answerHitl'] ? AnswerHitlResult | Failure : never;
};

/** The harnState.* settings sent in initializationOptions. */
export interface InitializationOptions {
  settings: { harnState: Record<string, unknown> };
  workspaceTrusted: boolean;
  /** Commands this client runs itself (lenses and code actions may name them; other clients get server commands). */
  clientCommands: string[];
  /** This client shows harn-state: documents rendered: keep their picture lines (inline SVG); absent = plain-text reader. */
  pictures: boolean;
}

export { PathGuard, DEFAULT_MAX_READ_BYTES, type OpenedFile, type WriteTarget, type AdmittedEntry } from './PathGuard.js';
export { PathPolicy, nameSuffixes, type PolicyConfig } from './PathPolicy.js';
export { normalizeRelative, isSafeName, MAX_PATH_LENGTH, MAX_SEGMENT_BYTES } from './pathSyntax.js';
export {
  WorkspaceService,
  WORKSPACE_ID,
  SERVER_WORKSPACE_KEY,
  type WorkspaceInfo,
  type MutationResult,
  type ServerWorkspacesSettings,
} from './WorkspaceService.js';
export {
  ClientWorkspaceService,
  validateFileUri,
  CLIENT_WORKSPACE_KEY,
  MAX_CLIENT_WORKSPACES,
  type ClientWorkspace,
  type ClientWorkspaceInput,
} from './ClientWorkspaceService.js';
export type { WorkspaceChange } from './WorkspaceWatcher.js';
export { MAX_LIST_ENTRIES, MAX_LIST_DEPTH, type FileEncoding, type ListOptions, type ReadResult, type WriteResult } from './workspaceFs.js';

export { CoreError, isCoreError } from './CoreError.js';
export { CORE_ERROR_TABLE, JSONRPC_CODE_BY_TRPC, JSONRPC_STANDARD, type CoreErrorCode } from './errorTable.js';

export { openRpcDocument, OPENRPC_VERSION, type ApiDescriptionOptions } from './openRpcDocument.js';
export { openApiDocument } from './openApiDocument.js';
export { describeProcedures, type DescribedProcedure, type SchemaTarget } from './procedureSchemas.js';
export { apiDocument, type ApiDocumentKind } from './apiDocuments.js';

// Only the entry that builds a document on request: the builders load with the first one (apiDocuments.ts).
export type { ApiDescriptionOptions } from './openRpcDocument.js';
export type { DescribedProcedure, SchemaTarget } from './procedureSchemas.js';
export { apiDocument, type ApiDocumentKind } from './apiDocuments.js';

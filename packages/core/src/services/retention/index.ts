export { Retention, RETENTION_KINDS, type RetentionKind, type RetentionOptions, type RetentionReport } from './Retention.js';
export { ArchiveFile, type ArchiveFormat, type ArchivedRow } from './ArchiveFile.js';

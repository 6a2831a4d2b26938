export { createTestUpstream, type TestUpstream, type TestUpstreamOptions, type RecordedRequest } from './createTestUpstream.js';
export { parseMarkers, type UpstreamFault, type MarkerDirectives } from './faults.js';
export type { WireFormat } from './wireFormats.js';

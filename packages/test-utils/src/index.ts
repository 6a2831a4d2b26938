// Fixtures for this repository's tests and benchmarks. Nothing here needs vitest;
// service detection (which does) is the `./services` entry.
export {
  createTestUpstream,
  type TestUpstream,
  type TestUpstreamOptions,
  type RecordedRequest,
  type ProviderId,
} from './upstream/createTestUpstream.js';
export { parseMarkers, type UpstreamFault, type MarkerDirectives, type UsageValues } from './upstream/faults.js';
export type { WireFormat } from './upstream/wireFormats.js';
export {
  TRAVERSAL_CORPUS,
  TRAVERSAL_SECRET,
  createTraversalFixture,
  expandCorpus,
  type TraversalVector,
  type TraversalFixture,
  type TraversalWorkspaceConfig,
} from './workspaces/traversalCorpus.js';
export { createBenchTree, type BenchTree, type BenchTreeOptions } from './workspaces/benchTree.js';
export { waitFor, type WaitForOptions, type Truthy } from './waitFor.js';
export { windowClock, type WindowClock } from './windowClock.js';
export { TYPES_CHECKED } from './typesChecked.js';

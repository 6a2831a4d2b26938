/**
 * A subscriber to an upstream resource's updates (one MCP session): called with the URI that changed.
 * In a file of its own, importing nothing: UpstreamContent's published declarations name it, and
 * ResourceSubscriptions' import the optional MCP client package's types, which an app without
 * that package could not resolve (install-smoke's type checks).
 */
export type ResourceSubscriber = (uri: string) => void;

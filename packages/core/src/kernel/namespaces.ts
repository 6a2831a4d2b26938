/**
 * The built-in procedure namespaces: the app router is built from exactly these
 * (routers/appRouter.ts checks it at compile time), and a custom router may not take one of them
 * (config/schema.ts).
 */
export const BUILT_IN_NAMESPACES = ['ai', 'mcp', 'system', 'admin', 'auth', 'billing', 'user', 'keys', 'gateway'] as const;

export type BuiltInNamespace = (typeof BUILT_IN_NAMESPACES)[number];

/** Whether a procedure path (`ai.generateText`) lies in a built-in namespace. */
export function isBuiltInPath(path: string): boolean {
  return (BUILT_IN_NAMESPACES as readonly string[]).includes(path.split('.', 1)[0]!);
}

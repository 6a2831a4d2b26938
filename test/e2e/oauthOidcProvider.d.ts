// oidc-provider ships no type declarations; this is the part the OAuth e2e tests use.
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  interface Account {
    accountId: string;
    claims(): Promise<Record<string, unknown>>;
  }

  export default class Provider {
    constructor(
      issuer: string,
      configuration: {
        clients?: Array<Record<string, unknown>>;
        features?: Record<string, unknown>;
        pkce?: { required?: () => boolean };
        claims?: Record<string, string[]>;
        cookies?: { keys?: string[] };
        ttl?: Record<string, number>;
        findAccount?: (ctx: unknown, id: string) => Promise<Account | undefined>;
      },
    );
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
  }
}

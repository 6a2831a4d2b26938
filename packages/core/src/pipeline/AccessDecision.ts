// A leaf: the request context (context.ts) names this type, and the policy that makes it imports
// the invoke seam, which imports the context.

/** The outcome of the one access policy for one call. */
export type AccessDecision =
  | { allowed: true }
  | {
      allowed: false;
      /**
       * UNAUTHORIZED: sign in (an anonymous caller gets the 401 challenge); FORBIDDEN: signed in
       * but not enough; INSUFFICIENT_SCOPE: the token lacks `requiredScopes` (403 challenge, step up).
       */
      code: 'UNAUTHORIZED' | 'FORBIDDEN' | 'INSUFFICIENT_SCOPE';
      /** Which rule refused, for the message and the security log. */
      rule: 'admin' | 'user' | 'writes' | 'toolsCall' | 'scope' | 'key';
      message: string;
      /** With rule 'key': `reason` (`key_not_allowed` or `key_scope_required`) and the `scope` it needs. */
      details?: Record<string, unknown>;
      /** With INSUFFICIENT_SCOPE: every scope the call needs, for the challenge's `scope`. */
      requiredScopes?: string[];
    };

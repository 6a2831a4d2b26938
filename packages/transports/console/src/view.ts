import type { Output } from './types.js';

/** Who is signed in, as the server says (user.getUserProfile). */
export type Me = Pick<Output<'user.getUserProfile'>, 'userId' | 'email' | 'isAdmin'>;

/**
 * A view draws into `main` and may return a function that stops it (timers, sessions). The views
 * (views/) implement it and main.ts picks one by the address; it lives below both, so no view
 * imports main.ts.
 */
export type View = (main: HTMLElement, me: Me, arg: string | undefined) => Promise<(() => void) | void>;

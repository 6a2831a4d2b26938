/** Where a call's target comes from when it is a route's: the route and the target's index in it. */
export interface RouteSlot {
  name: string;
  index: number;
  /** Its cooldown and capacity were read when the call was planned (no second read before the attempt). */
  planned?: true;
}

/** A target that may belong to a route. */
export interface Routable {
  provider: string;
  model: string;
  route?: RouteSlot | undefined;
}

/** How an attempt on a route target ended. */
export type RouteOutcome = { ok: true } | { ok: false; reason: string; retryAfterSeconds?: number | undefined };

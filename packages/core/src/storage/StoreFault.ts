import type { CoreError } from '../kernel/CoreError.js';

/**
 * A store's reason to refuse every call for good (its data lost or replaced under the running
 * server, a newer release writing to it): set once, the first reason stays, and every listener
 * (Storage.onFault: the runtime's error log line) hears it once.
 */
export class StoreFault {
  private reason: CoreError | undefined;
  private readonly listeners: Array<(err: CoreError) => void> = [];

  get error(): CoreError | undefined {
    return this.reason;
  }

  raise(err: CoreError): CoreError {
    if (this.reason) return this.reason;
    this.reason = err;
    for (const listener of this.listeners.splice(0)) listener(err);
    return err;
  }

  /** `listener` once the store enters the state (at once when it already has). */
  listen(listener: (err: CoreError) => void): void {
    if (this.reason) listener(this.reason);
    else this.listeners.push(listener);
  }
}

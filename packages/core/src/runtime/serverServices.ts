import type { AiBackendServices } from './AiBackendServices.js';
import type { Runtime } from './Runtime.js';

const handles = new WeakMap<Runtime, AiBackendServices>();
const runtimes = new WeakMap<AiBackendServices, Runtime>();

/** The public services of a runtime (one object per runtime). */
export function servicesOf(runtime: Runtime): AiBackendServices {
  let services = handles.get(runtime);
  if (!services) {
    services = Object.freeze({ storage: runtime.storage, prompts: runtime.prompts, resources: runtime.resources });
    handles.set(runtime, services);
    runtimes.set(services, runtime);
  }
  return services;
}

/**
 * The runtime behind a server's public services: for the workspace packages and their tests
 * (`@ai-backend/core/internal`), never for applications.
 */
export function runtimeOfServices(services: AiBackendServices): Runtime {
  const runtime = runtimes.get(services);
  if (!runtime) throw new TypeError('not the services of an ai-backend server (server.ready())');
  return runtime;
}

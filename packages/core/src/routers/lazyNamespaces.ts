/**
 * The built-in namespaces that load on first use (appRouter.ts), in one module so the bundle
 * puts them, and what only they import, in one chunk: loadRouter builds them together, and every
 * chunk more is one more module for Node to resolve and link at start-up.
 */
export { adminRouter } from './admin/adminRouter.js';
export { aiRouter } from './ai/aiRouter.js';
export { authRouter } from './auth/authRouter.js';
export { billingRouter } from './billing/billingRouter.js';
export { gatewayRouter } from './gateway/gatewayRouter.js';
export { keysRouter } from './keys/keysRouter.js';
export { systemRouter } from './system/systemRouter.js';
export { userRouter } from './user/userRouter.js';

/**
 * Whether this run may leave TypeScript's checks out: its verdict does not depend on the Node that
 * runs it, so CI type-checks on its primary Node and sets `AI_BACKEND_TEST_TYPES_CHECKED=1` on the
 * others (docs/testing.md, "What runs on which Node", rule 3). The tests that run the compiler
 * (install-smoke's checks of the installed app, core's walk of the public declarations) skip those
 * checks then, visibly.
 */
export const TYPES_CHECKED = process.env.AI_BACKEND_TEST_TYPES_CHECKED === '1';

// Used by bundleDist.mjs for an inlined @trpc/server. Its dist is compiled to an older target, so
// every object spread in its code (`{ ...opts, ctx }`) runs the compiler's `_objectSpread2` helper:
// `Object.keys` and a symbol list per source object, a closure and a `defineProperty` per key. A
// procedure call spreads its options and context twice per middleware (`callRecursive`), which
// was about 4 % of the CPU profile of an MCP tools/call (docs/performance.md, "MCP against the v2
// SDK"). The same helper with the engine's own spread does the same copy (own enumerable string
// and symbol keys, getters read, data properties defined, `__proto__` an own key, not the
// prototype) in one step.
//
// The object literals written between spreads (`{ ...opts, ctx, next() {} }`) are passed to the
// helper on their own (the even arguments) and defined with `Object.getOwnPropertyDescriptors` and
// `Object.defineProperties`, so that an accessor in the literal stays one: 8 of each per MCP
// tools/call, about 13 % of its instructions (docs/performance.md). When no module of the inlined
// package writes an accessor in source (`get x() {}`, `set x(v) {}`), no literal has one, and a
// spread of the literal defines the same data properties: the helper is then spreads only
// (SPREAD_HELPER). The check is textual and errs one way: any `get`/`set` followed by a name and a
// parenthesis (a class getter, a comment) keeps the exact FAST_HELPER.

/** The helper as @oxc-project/runtime writes it (objectSpread2.js), which tRPC 11's dist carries. */
const OXC_HELPER = `function _objectSpread2(e) {
	for (var r = 1; r < arguments.length; r++) {
		var t = null != arguments[r] ? arguments[r] : {};
		r % 2 ? ownKeys(Object(t), !0).forEach(function(r) {
			_defineProperty(e, r, t[r]);
		}) : Object.getOwnPropertyDescriptors ? Object.defineProperties(e, Object.getOwnPropertyDescriptors(t)) : ownKeys(Object(t)).forEach(function(r) {
			Object.defineProperty(e, r, Object.getOwnPropertyDescriptor(t, r));
		});
	}
	return e;
}`;

/**
 * The replacement. Odd arguments are spread sources (`{ ...x }`), even ones object literals written
 * between spreads (`{}` in tRPC's code: the compiler adds one to keep a literal's accessors).
 * `{ ...e, ...t }` is a new object, not `e` updated: every call site uses the result (the compiled
 * form `_objectSpread2(_objectSpread2({}, a), {}, { b })` starts from a fresh literal), and as
 * long as `e` holds plain data properties, which a literal or an earlier spread gives, the copy
 * is the same. After an even argument that defines properties (an accessor stays an accessor
 * there) the remaining sources are defined onto `e` one key at a time, as the original does.
 */
export const FAST_HELPER = `function _objectSpread2(e) {
	var exact = false;
	for (var r = 1; r < arguments.length; r++) {
		var t = null != arguments[r] ? arguments[r] : {};
		if (r % 2 === 0) {
			var d = Object.getOwnPropertyDescriptors(t);
			for (var _ in d) { exact = true; break; }
			if (!exact && Object.getOwnPropertySymbols(d).length > 0) exact = true;
			Object.defineProperties(e, d);
		} else if (exact) {
			ownKeys(Object(t), !0).forEach(function(r) {
				_defineProperty(e, r, t[r]);
			});
		} else e = { ...e, ...t };
	}
	return e;
}`;

/**
 * The replacement for a package none of whose modules writes an accessor (see
 * `writesAccessors`): every argument, literal or spread source, is spread into a new object.
 * Three arguments (`_objectSpread2(_objectSpread2({}, a), {}, { b })`, how tRPC's code writes
 * `{ ...a, b }`) are one copy, not one per argument. Null and undefined spread to nothing, as
 * the original skips them.
 */
export const SPREAD_HELPER = `function _objectSpread2(e) {
	if (arguments.length === 3) return { ...e, ...arguments[1], ...arguments[2] };
	for (var r = 1; r < arguments.length; r++) e = { ...e, ...arguments[r] };
	return e;
}`;

/**
 * Whether `source` may define an accessor in an object literal: a `get` or `set` keyword followed
 * by a property name (a plain, quoted, numeric or computed one) and a parameter list. Errs
 * towards yes (a class getter or a comment like "set x(...)" counts too).
 */
export function writesAccessors(source) {
  return ACCESSOR.some((re) => re.test(source));
}
const ACCESSOR = [
  // get x() {}, set x(v) {}, static get x() {}
  /\b(?:get|set)\s+[\w$]+\s*\(/,
  // get [key]() {}, get 'x'() {}, get 0() {}
  /\b(?:get|set)\s*[['"`\d]/,
];

/**
 * `source` (a module of an inlined package) with the compiler's object-spread helper replaced;
 * `replaced` says whether it held one, `spreadOnly` whether it got SPREAD_HELPER.
 * `packageSources`: every module of that package (the helper is defined in one module and called
 * from the others), asked only when `source` holds the helper.
 */
export function fastObjectSpread(source, packageSources = () => [source]) {
  if (!source.includes(OXC_HELPER)) return { text: source, replaced: false, spreadOnly: false };
  const spreadOnly = !packageSources().some(writesAccessors);
  return { text: source.replace(OXC_HELPER, spreadOnly ? SPREAD_HELPER : FAST_HELPER), replaced: true, spreadOnly };
}

export { OXC_HELPER };

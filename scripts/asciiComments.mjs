// Used by bundleDist.mjs. esbuild escapes non-ASCII characters in strings, regular expressions and
// identifiers (its default `charset: 'ascii'`), but keeps the JSDoc of class members as written,
// and one "→" there makes V8 hold the whole file's source as a two-byte string: core's 400 kB
// internal.js took 800 kB of heap for as long as the process ran (docs/performance.md, "Cold
// start and idle RSS, fifth session"). Comments only: anything non-ASCII elsewhere is an error.

/** `text` with every non-ASCII character of a comment line written as `\u…`; throws on one outside comments. */
export function asciiComments(text, file = 'output') {
  if (!/[^\x00-\x7f]/.test(text)) return text;
  return text
    .split('\n')
    .map((line, i) => {
      if (!/[^\x00-\x7f]/.test(line)) return line;
      // A whole-line comment: `//…`, `/*…`, or a ` * …` continuation that does not close and go on with code.
      const comment = /^\s*(\/\/|\/\*|\*)/.test(line) && !/\*\/\s*\S/.test(line);
      if (!comment) throw new Error(`${file}:${i + 1}: non-ASCII character outside a comment: ${line.trim().slice(0, 80)}`);
      return line.replace(/[^\x00-\x7f]/gu, (c) => `\\u{${c.codePointAt(0).toString(16)}}`);
    })
    .join('\n');
}

import { h } from './dom.js';

/** The part of JSON Schema the forms understand; anything else is edited as JSON. */
export interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: unknown[];
  const?: unknown;
  description?: string;
  default?: unknown;
  anyOf?: JsonSchema[];
  minimum?: number;
  maximum?: number;
  items?: JsonSchema;
}

export interface SchemaForm {
  element: HTMLElement;
  /** The input the form describes, or an Error naming the field that does not parse. */
  value(): Record<string, unknown> | Error;
}

const typeOf = (s: JsonSchema): string | undefined => (Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type);

/**
 * A form for an object's fields (the input of a procedure or an MCP tool): text, number, check
 * box and choice fields for scalars, a JSON box for the rest. Empty optional fields are left
 * out, so the server applies its defaults.
 */
export function schemaForm(schema: JsonSchema | undefined, idPrefix: string): SchemaForm {
  const props = schema?.properties ?? {};
  const required = new Set(schema?.required ?? []);
  const readers: Array<() => [string, unknown] | Error | undefined> = [];
  const fields = Object.entries(props).map(([name, s]) => {
    const id = `${idPrefix}-${name}`;
    const type = typeOf(s);
    const label = h('label', { for: id }, name, required.has(name) ? ' *' : '', s.description ? h('small', {}, ` ${s.description}`) : null);
    let input: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;
    if (s.enum) {
      input = h(
        'select',
        { id, name },
        required.has(name) ? null : h('option', { value: '' }, '(default)'),
        s.enum.map((v) => h('option', { value: JSON.stringify(v) }, String(v))),
      );
      const sel = input;
      readers.push(() => (sel.value === '' ? undefined : [name, JSON.parse(sel.value)]));
    } else if (type === 'boolean') {
      input = h(
        'select',
        { id, name },
        h('option', { value: '' }, '(default)'),
        h('option', { value: 'true' }, 'true'),
        h('option', { value: 'false' }, 'false'),
      );
      const sel = input;
      readers.push(() => (sel.value === '' ? undefined : [name, sel.value === 'true']));
    } else if (type === 'number' || type === 'integer') {
      input = h('input', {
        id,
        name,
        type: 'number',
        step: type === 'integer' ? '1' : 'any',
        placeholder: s.default !== undefined ? String(s.default) : '',
      });
      const inp = input;
      readers.push(() => (inp.value === '' ? undefined : [name, Number(inp.value)]));
    } else if (type === 'string') {
      input = h('input', { id, name, type: 'text', placeholder: s.default !== undefined ? String(s.default) : '', autocomplete: 'off' });
      const inp = input;
      readers.push(() => (inp.value === '' ? undefined : [name, inp.value]));
    } else {
      input = h('textarea', { id, name, rows: 3, placeholder: 'JSON' });
      const ta = input;
      readers.push(() => {
        if (ta.value.trim() === '') return undefined;
        try {
          return [name, JSON.parse(ta.value)];
        } catch {
          return new Error(`${name}: not valid JSON`);
        }
      });
    }
    if (required.has(name)) input.setAttribute('required', '');
    return h('div', { class: 'field' }, label, input);
  });
  const element = h('div', { class: 'schema-form' }, fields.length ? fields : h('p', { class: 'muted' }, 'No input.'));
  return {
    element,
    value() {
      const out: Record<string, unknown> = {};
      for (const read of readers) {
        const r = read();
        if (r instanceof Error) return r;
        if (r) out[r[0]] = r[1];
      }
      return out;
    },
  };
}

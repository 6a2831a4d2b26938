import { rpc } from '../api.js';
import { clear, errorBox, h, jsonBlock, section } from '../dom.js';
import type { View } from '../view.js';
import { schemaForm, type JsonSchema } from '../schemaForm.js';

interface Method {
  name: string;
  summary?: string;
  description?: string;
  paramStructure: 'by-name' | 'by-position';
  params: Array<{ name: string; schema: JsonSchema; required: boolean; description?: string }>;
  'x-access': string;
}

/**
 * API explorer: every procedure of the OpenRPC document (custom routers included), a form built
 * from its input schema, and the answer as JSON. Calls go through /rpc with the signed-in token.
 */
export const explorerView: View = async (main, _me, arg) => {
  main.appendChild(h('h1', {}, 'API explorer'));
  const doc = (await fetch('/openrpc.json').then((r) =>
    r.ok ? r.json() : Promise.reject(new Error('the OpenRPC document is not served (apiDescription.enabled)')),
  )) as { methods: Method[] };
  const methods = doc.methods.sort((a, b) => a.name.localeCompare(b.name));
  const select = h(
    'select',
    { id: 'method-select' },
    methods.map((m) => h('option', { value: m.name, selected: m.name === arg }, `${m.name} (${m['x-access']})`)),
  );
  const panel = h('div', {});
  const answer = h('div', { id: 'explorer-answer', 'aria-live': 'polite' });
  const show = () => {
    clear(panel);
    clear(answer);
    const m = methods.find((x) => x.name === select.value)!;
    const byPosition = m.paramStructure === 'by-position';
    const schema: JsonSchema = byPosition
      ? { type: 'object', properties: { input: m.params[0]!.schema }, required: m.params[0]!.required ? ['input'] : [] }
      : {
          type: 'object',
          properties: Object.fromEntries(
            m.params.map((p) => [p.name, { ...p.schema, description: p.description ?? p.schema.description }]),
          ),
          required: m.params.filter((p) => p.required).map((p) => p.name),
        };
    const form = schemaForm(schema, 'param');
    panel.append(
      h('p', {}, m.summary ?? '', ' ', h('small', { class: 'muted' }, m.description ?? '')),
      h(
        'form',
        {
          id: 'explorer-form',
          onsubmit: async (ev: Event) => {
            ev.preventDefault();
            clear(answer);
            const v = form.value();
            if (v instanceof Error) return void answer.appendChild(errorBox(v));
            try {
              const params = byPosition ? (v.input === undefined ? [] : [v.input]) : v;
              answer.appendChild(jsonBlock(await rpc(m.name, params)));
            } catch (e) {
              answer.appendChild(errorBox(e));
            }
          },
        },
        form.element,
        h('button', { type: 'submit', class: 'primary', id: 'explorer-call' }, 'Call'),
      ),
    );
  };
  select.addEventListener('change', show);
  main.appendChild(section('Procedure', h('label', { for: 'method-select' }, `${methods.length} procedures`), select, panel, answer));
  show();
};

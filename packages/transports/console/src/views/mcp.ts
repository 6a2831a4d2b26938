import { clear, errorBox, h, jsonBlock, section, table } from '../dom.js';
import type { View } from '../view.js';
import { McpClient } from '../mcpClient.js';
import { schemaForm, type JsonSchema } from '../schemaForm.js';
import { upstreamsSection } from '../mcpUpstreams.js';

interface Tool {
  name: string;
  title?: string;
  description?: string;
  inputSchema?: JsonSchema;
}

/** MCP: the gateway's upstream servers; tools, prompts and resources as an MCP client sees them at /mcp, and a form to try a tool. */
export const mcpView: View = async (main) => {
  main.appendChild(h('h1', {}, 'MCP'));
  const upstreams = upstreamsSection();
  const client = new McpClient();
  const init = await client.connect();
  main.appendChild(h('p', { class: 'muted' }, `Server ${init.serverInfo?.name ?? ''} ${init.serverInfo?.version ?? ''}`));
  const caps = init.capabilities ?? {};
  const [tools, prompts, resources] = await Promise.all([
    client.request<{ tools: Tool[] }>('tools/list', {}),
    caps.prompts
      ? client.request<{ prompts: Array<{ name: string; description?: string }> }>('prompts/list', {})
      : Promise.resolve({ prompts: [] }),
    caps.resources
      ? client.request<{ resources: Array<{ uri: string; name: string; mimeType?: string }> }>('resources/list', {})
      : Promise.resolve({ resources: [] }),
  ]);
  const select = h(
    'select',
    { id: 'tool-select' },
    tools.tools.map((t) => h('option', { value: t.name }, t.name)),
  );
  const panel = h('div', {});
  const answer = h('div', { id: 'tool-answer', 'aria-live': 'polite' });
  const show = () => {
    clear(panel);
    clear(answer);
    const tool = tools.tools.find((t) => t.name === select.value);
    if (!tool) return;
    const form = schemaForm(tool.inputSchema, 'tool');
    panel.append(
      h('p', {}, tool.description ?? ''),
      h(
        'form',
        {
          id: 'tool-form',
          onsubmit: async (ev: Event) => {
            ev.preventDefault();
            clear(answer);
            const args = form.value();
            if (args instanceof Error) return void answer.appendChild(errorBox(args));
            try {
              answer.appendChild(jsonBlock(await client.request('tools/call', { name: tool.name, arguments: args })));
            } catch (e) {
              answer.appendChild(errorBox(e));
            }
          },
        },
        form.element,
        h('button', { type: 'submit', class: 'primary', id: 'tool-call' }, 'Call tool'),
      ),
    );
  };
  select.addEventListener('change', show);
  main.append(
    await upstreams,
    section(`Try a tool (${tools.tools.length} tools)`, h('label', { for: 'tool-select' }, 'Tool'), select, panel, answer),
    section(
      'Tools',
      table(
        ['name', 'description'],
        tools.tools.map((t) => [t.name, t.description ?? '']),
      ),
    ),
    section(
      'Prompts',
      prompts.prompts.length
        ? table(
            ['name', 'description'],
            prompts.prompts.map((p) => [p.name, p.description ?? '']),
          )
        : h('p', { class: 'muted' }, 'None.'),
    ),
    section(
      'Resources',
      resources.resources.length
        ? table(
            ['uri', 'name', 'type'],
            resources.resources.map((r) => [r.uri, r.name, r.mimeType ?? '']),
          )
        : h('p', { class: 'muted' }, 'None.'),
    ),
  );
  show();
  return () => void client.close();
};

/**
 * A core error's message names the field it is about as core's input does (`maxTokens may be at
 * most 32768`, `toolChoice names "x"…`, `tools.0.parameters is not a valid JSON Schema`): with
 * that leading name, dotted path or last segment, replaced by the field as the request wrote it
 * (`max_completion_tokens`, `tool_choice`, `tools[0].function.parameters`), so the message and
 * `param` say the same. A message that starts otherwise is returned as it is.
 */
export function namedInMessage(message: string, field: string, named: string): string {
  const leaf = field.slice(field.lastIndexOf('.') + 1);
  for (const own of [field, leaf])
    if (own && message.startsWith(own) && /^[\s:]/.test(message.slice(own.length))) return named + message.slice(own.length);
  return message;
}

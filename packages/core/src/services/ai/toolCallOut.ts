/** A tool call the model asked for; the client runs it and sends the result back in `messages`. */
export interface ToolCallOut {
  toolCallId: string;
  toolName: string;
  input: unknown;
}

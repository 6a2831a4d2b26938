// ai-backend with an OpenTelemetry SDK registered (every span recorded, batched to an exporter
// that drops them): what tracing costs when an operator turns it on. Config JSON in argv[2].
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';

const dropAll = { export: (_spans, done) => done({ code: 0 }), shutdown: async () => undefined };
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(dropAll)] }));
await import('./ai-backend.mjs');

import { expect, it } from 'vitest';
import { matrixModes } from './describeMatrix.js';
import { MODES } from './testServer.js';

it('runs both modes unless AI_BACKEND_TEST_MODES names some, and refuses a name that is not a mode', () => {
  expect(matrixModes(undefined)).toEqual(MODES);
  expect(matrixModes('')).toEqual(MODES);
  expect(matrixModes('listening')).toEqual(['listening']);
  expect(matrixModes(' listening , in-process')).toEqual(['in-process', 'listening']);
  expect(() => matrixModes('listen')).toThrow(/listen is not one of in-process, listening/);
});

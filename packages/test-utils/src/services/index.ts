export { testService, testServices } from './testService.js';
export { testRedis, testRedisOptions, rawTestClient, dropTestKeys, type TestRedis } from './testRedis.js';
export {
  testPostgres,
  postgresAt,
  testPostgresOptions,
  dropTestSchema,
  runTestSql,
  holdStoreKeyLock,
  type TestPostgres,
} from './testPostgres.js';
export {
  probeServices,
  SERVICE_ENV,
  servicesRequired,
  hostPort,
  type ServiceName,
  type ServiceStatus,
  type ServiceMap,
} from './probeServices.js';
export {
  startPrivateRedis,
  startPrivatePostgres,
  postgresBinDir,
  freePort,
  type HangableServer,
  type PrivateServer,
} from './privateServers.js';

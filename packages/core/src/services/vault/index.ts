export { KeyVault, type KeyVaultOptions, type KeyStatus } from './KeyVault.js';
export { deriveKey } from './vaultCrypto.js';

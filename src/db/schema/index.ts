export * from './accounts'
export * from './ledger'
export * from './vault'

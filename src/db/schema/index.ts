export * from './accounts'
export * from './ledger'

ALTER TABLE "calls" ADD COLUMN "tokens_cache_write" integer;--> statement-breakpoint
ALTER TABLE "calls" ADD COLUMN "tokens_cache_write_1h" integer;--> statement-breakpoint
ALTER TABLE "ledger_entries" ADD COLUMN "tokens_cache_write" integer;--> statement-breakpoint
ALTER TABLE "ledger_entries" ADD COLUMN "tokens_cache_write_1h" integer;
ALTER TABLE "calls" ADD COLUMN "model" text;--> statement-breakpoint
ALTER TABLE "calls" ADD COLUMN "tokens_in" integer;--> statement-breakpoint
ALTER TABLE "calls" ADD COLUMN "tokens_cached" integer;--> statement-breakpoint
ALTER TABLE "calls" ADD COLUMN "tokens_out" integer;--> statement-breakpoint
ALTER TABLE "calls" ADD COLUMN "reserved" integer;--> statement-breakpoint
ALTER TABLE "calls" ADD COLUMN "uncharged" integer;--> statement-breakpoint
ALTER TABLE "calls" ADD COLUMN "usage_source" text;--> statement-breakpoint
ALTER TABLE "ledger_entries" ADD COLUMN "model" text;--> statement-breakpoint
ALTER TABLE "ledger_entries" ADD COLUMN "tokens_in" integer;--> statement-breakpoint
ALTER TABLE "ledger_entries" ADD COLUMN "tokens_cached" integer;--> statement-breakpoint
ALTER TABLE "ledger_entries" ADD COLUMN "tokens_out" integer;
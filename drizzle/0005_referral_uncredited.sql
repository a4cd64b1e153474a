ALTER TABLE "ledger_entries" ADD COLUMN "uncredited" bigint;--> statement-breakpoint
ALTER TABLE "ledger_entries" ADD COLUMN "uncredited_reason" text;
CREATE INDEX IF NOT EXISTS "calls_account_time" ON "calls" USING btree ("account_id","at");--> statement-breakpoint
DROP INDEX IF EXISTS "calls_account_at";
SELECT s.plan, c.cancel_reason, COUNT(*) AS cancellations,
       ROUND(100.0 * COUNT(*) / SUM(COUNT(*)) OVER (PARTITION BY s.plan), 1) AS share_of_plan_pct,
       PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY c.tenure_days)::int AS median_tenure_days
FROM analytics.subscription_events s JOIN analytics.cancellations c USING (account_id)
WHERE s.signup_at >= '2026-07-06' AND s.signup_at < '2026-10-05'
  AND s.plan IN ('Starter', 'Team', 'Business') AND NOT s.is_internal
GROUP BY 1, 2 ORDER BY array_position(ARRAY['Starter', 'Team', 'Business'], s.plan), 3 DESC
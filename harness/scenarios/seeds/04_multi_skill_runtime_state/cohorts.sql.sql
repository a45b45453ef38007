SELECT date_trunc('week', s.signup_at)::date AS signup_week, s.plan,
       COUNT(*) AS signups,
       COUNT(*) FILTER (WHERE e.active_on_d30) AS retained_d30,
       COUNT(*) FILTER (WHERE e.active_on_d60) AS retained_d60,
       ROUND(100.0 * COUNT(*) FILTER (WHERE e.active_on_d60) / COUNT(*), 1) AS d60_retention_pct
FROM analytics.subscription_events s JOIN analytics.activity_flags e USING (account_id)
WHERE s.signup_at >= '2026-07-06' AND s.signup_at < '2026-10-05'
  AND s.plan IN ('Starter', 'Team', 'Business') AND NOT s.is_internal
GROUP BY 1, 2 ORDER BY 1, array_position(ARRAY['Starter', 'Team', 'Business'], s.plan)
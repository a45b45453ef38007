SELECT r.region, p.product_line,
       COUNT(DISTINCT ol.order_id)          AS orders,
       ROUND(SUM(ol.net_revenue_usd), 2)    AS revenue_usd,
       ROUND(SUM(ol.gross_margin_usd), 2)   AS gross_margin_usd,
       SUM(ol.units)                        AS units,
       ROUND(AVG(ol.discount_pct), 1)       AS avg_discount_pct,
       ROUND(100.0 * SUM(ol.returned_units) / NULLIF(SUM(ol.units), 0), 1) AS return_rate_pct
FROM finance.order_lines ol
JOIN finance.dim_region r USING (region_id)
JOIN finance.dim_product_line p USING (product_line_id)
WHERE ol.fiscal_quarter = '2026-Q3' AND ol.channel IN ('dtc', 'wholesale')
GROUP BY r.region, r.sort_order, p.product_line, p.sort_order
ORDER BY r.sort_order, p.sort_order
-- Every member object of the extension :'extname', with its definition,
-- privileges, owner and comment, one after the other: two installations
-- are the same objects when this lists the same (t/009_upgrade.pl,
-- t/015_router_hardening.pl).  Run with psql -v extname=...
WITH m AS (
    SELECT d.classid, d.objid, d.objsubid
    FROM pg_depend d
    JOIN pg_extension e ON d.refclassid = 'pg_extension'::regclass AND d.refobjid = e.oid
    WHERE e.extname = :'extname' AND d.deptype = 'e'
)
SELECT (SELECT format('extension %s %s in schema %s, relocatable %s, config %s %s',
                      extname, extversion, extnamespace::regnamespace, extrelocatable,
                      coalesce(extconfig::regclass[]::text, '-'), coalesce(extcondition::text, '-'))
        FROM pg_extension WHERE extname = :'extname')
    || E'\n' ||
    string_agg(x.descr || E'\n' || x.def, E'\n' ORDER BY x.descr)
FROM (
    SELECT pg_describe_object(m.classid, m.objid, m.objsubid) AS descr,
        concat_ws(E'\n',
            '  comment: ' || coalesce(obj_description(m.objid, m.classid::regclass::text), '-'),
            CASE m.classid
            WHEN 'pg_proc'::regclass THEN
                (SELECT '  acl: ' || coalesce(p.proacl::text, 'default') || E'\n  owner: ' || p.proowner::regrole
                        || E'\n' || pg_get_functiondef(p.oid)
                 FROM pg_proc p WHERE p.oid = m.objid)
            WHEN 'pg_type'::regclass THEN
                (SELECT '  type: ' || t.typtype::text || ' ' || format_type(t.oid, NULL)
                        || ' acl: ' || coalesce(t.typacl::text, 'default')
                        || ' owner: ' || t.typowner::regrole
                        || coalesce(E'\n  attributes: ' || (
                            SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', '
                                              ORDER BY a.attnum)
                            FROM pg_attribute a
                            WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped), '')
                 FROM pg_type t WHERE t.oid = m.objid)
            WHEN 'pg_class'::regclass THEN
                (SELECT concat_ws(E'\n',
                    '  relkind: ' || c.relkind::text || ' persistence: ' || c.relpersistence::text
                        || ' acl: ' || coalesce(c.relacl::text, 'default')
                        || ' owner: ' || c.relowner::regrole
                        || ' options: ' || coalesce(c.reloptions::text, '-'),
                    CASE WHEN c.relkind = 'v' THEN pg_get_viewdef(c.oid, true) END,
                    (SELECT string_agg(format('  column %s %s%s%s%s acl %s comment %s',
                                a.attname, format_type(a.atttypid, a.atttypmod),
                                CASE WHEN a.attcollation <> 0 THEN ' collate ' || a.attcollation::regcollation END,
                                CASE WHEN a.attnotnull THEN ' not null' END,
                                ' default ' || pg_get_expr(ad.adbin, ad.adrelid),
                                coalesce(a.attacl::text, 'default'),
                                coalesce(col_description(c.oid, a.attnum), '-')),
                            E'\n' ORDER BY a.attnum)
                     FROM pg_attribute a
                     LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
                     WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
                    (SELECT string_agg('  index ' || pg_get_indexdef(i.indexrelid), E'\n' ORDER BY 1)
                     FROM pg_index i WHERE i.indrelid = c.oid),
                    (SELECT string_agg('  constraint ' || co.conname || ' ' || pg_get_constraintdef(co.oid),
                                       E'\n' ORDER BY co.conname)
                     FROM pg_constraint co WHERE co.conrelid = c.oid),
                    (SELECT string_agg('  ' || pg_get_triggerdef(tg.oid, true), E'\n' ORDER BY tg.tgname)
                     FROM pg_trigger tg WHERE tg.tgrelid = c.oid AND NOT tg.tgisinternal),
                    (SELECT string_agg('  rule ' || r.rulename || ' ' || pg_get_ruledef(r.oid, true),
                                       E'\n' ORDER BY r.rulename)
                     FROM pg_rewrite r WHERE r.ev_class = c.oid AND c.relkind <> 'v'),
                    (SELECT string_agg('  policy ' || pol.polname, E'\n' ORDER BY pol.polname)
                     FROM pg_policy pol WHERE pol.polrelid = c.oid))
                 FROM pg_class c WHERE c.oid = m.objid)
            END) AS def
    FROM m
) AS x

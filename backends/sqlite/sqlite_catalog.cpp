// pg_catalog and information_schema on SQLite: see sqlite_catalog.hpp and
// docs/catalog.md. OIDs: a table, view or index of sqlite_schema row R is
// 16384 + 4R; a table's synthesized primary-key index is +1, its PRIMARY KEY
// or a unique index's constraint +2; foreign keys and defaults use ranges of
// their own (kFkBase, kDefBase). They hold while the schema does.

#include "backends/sqlite/sqlite_catalog.hpp"

#include <sqlite3.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "backends/sqlite/sqlite_types.hpp"
#include "protocol/pg/types.hpp"

namespace wirepool::sqlite {

namespace {

constexpr int64_t kOwner = 10;  // the one role: "wirepool"
constexpr const char* kRole = "wirepool";

// The relations, with PostgreSQL 15's columns (generated from a PostgreSQL 15
// server's pg_attribute; types reduced to what SQLite and the driver read).
constexpr const char* kTables = R"sql(
CREATE TABLE pg_catalog.pg_namespace(oid INT4, nspname TEXT, nspowner INT4, nspacl TEXT);
CREATE TABLE pg_catalog.pg_class(oid INT4, relname TEXT, relnamespace INT4, reltype INT4, reloftype INT4, relowner INT4, relam INT4, relfilenode INT4, reltablespace INT4, relpages INT4, reltuples FLOAT4, relallvisible INT4, reltoastrelid INT4, relhasindex BOOLEAN, relisshared BOOLEAN, relpersistence TEXT, relkind TEXT, relnatts INT2, relchecks INT2, relhasrules BOOLEAN, relhastriggers BOOLEAN, relhassubclass BOOLEAN, relrowsecurity BOOLEAN, relforcerowsecurity BOOLEAN, relispopulated BOOLEAN, relreplident TEXT, relispartition BOOLEAN, relrewrite INT4, relfrozenxid INT4, relminmxid INT4, relacl TEXT, reloptions TEXT, relpartbound TEXT);
CREATE TABLE pg_catalog.pg_attribute(attrelid INT4, attname TEXT, atttypid INT4, attstattarget INT4, attlen INT2, attnum INT2, attndims INT4, attcacheoff INT4, atttypmod INT4, attbyval BOOLEAN, attalign TEXT, attstorage TEXT, attcompression TEXT, attnotnull BOOLEAN, atthasdef BOOLEAN, atthasmissing BOOLEAN, attidentity TEXT, attgenerated TEXT, attisdropped BOOLEAN, attislocal BOOLEAN, attinhcount INT4, attcollation INT4, attacl TEXT, attoptions TEXT, attfdwoptions TEXT, attmissingval TEXT);
CREATE TABLE pg_catalog.pg_attrdef(oid INT4, adrelid INT4, adnum INT2, adbin TEXT);
CREATE TABLE pg_catalog.pg_index(indexrelid INT4, indrelid INT4, indnatts INT2, indnkeyatts INT2, indisunique BOOLEAN, indnullsnotdistinct BOOLEAN, indisprimary BOOLEAN, indisexclusion BOOLEAN, indimmediate BOOLEAN, indisclustered BOOLEAN, indisvalid BOOLEAN, indcheckxmin BOOLEAN, indisready BOOLEAN, indislive BOOLEAN, indisreplident BOOLEAN, indkey TEXT, indcollation TEXT, indclass TEXT, indoption TEXT, indexprs TEXT, indpred TEXT);
CREATE TABLE pg_catalog.pg_constraint(oid INT4, conname TEXT, connamespace INT4, contype TEXT, condeferrable BOOLEAN, condeferred BOOLEAN, convalidated BOOLEAN, conrelid INT4, contypid INT4, conindid INT4, conparentid INT4, confrelid INT4, confupdtype TEXT, confdeltype TEXT, confmatchtype TEXT, conislocal BOOLEAN, coninhcount INT4, connoinherit BOOLEAN, conkey TEXT, confkey TEXT, conpfeqop TEXT, conppeqop TEXT, conffeqop TEXT, confdelsetcols TEXT, conexclop TEXT, conbin TEXT);
CREATE TABLE pg_catalog.pg_type(oid INT4, typname TEXT, typnamespace INT4, typowner INT4, typlen INT2, typbyval BOOLEAN, typtype TEXT, typcategory TEXT, typispreferred BOOLEAN, typisdefined BOOLEAN, typdelim TEXT, typrelid INT4, typsubscript TEXT, typelem INT4, typarray INT4, typinput TEXT, typoutput TEXT, typreceive TEXT, typsend TEXT, typmodin TEXT, typmodout TEXT, typanalyze TEXT, typalign TEXT, typstorage TEXT, typnotnull BOOLEAN, typbasetype INT4, typtypmod INT4, typndims INT4, typcollation INT4, typdefaultbin TEXT, typdefault TEXT, typacl TEXT);
CREATE TABLE pg_catalog.pg_am(oid INT4, amname TEXT, amhandler TEXT, amtype TEXT);
CREATE TABLE pg_catalog.pg_database(oid INT4, datname TEXT, datdba INT4, encoding INT4, datlocprovider TEXT, datistemplate BOOLEAN, datallowconn BOOLEAN, datconnlimit INT4, datfrozenxid INT4, datminmxid INT4, dattablespace INT4, datcollate TEXT, datctype TEXT, daticulocale TEXT, datcollversion TEXT, datacl TEXT);
CREATE TABLE pg_catalog.pg_roles(rolname TEXT, rolsuper BOOLEAN, rolinherit BOOLEAN, rolcreaterole BOOLEAN, rolcreatedb BOOLEAN, rolcanlogin BOOLEAN, rolreplication BOOLEAN, rolconnlimit INT4, rolpassword TEXT, rolvaliduntil TEXT, rolbypassrls BOOLEAN, rolconfig TEXT, oid INT4);
CREATE TABLE pg_catalog.pg_user(usename TEXT, usesysid INT4, usecreatedb BOOLEAN, usesuper BOOLEAN, userepl BOOLEAN, usebypassrls BOOLEAN, passwd TEXT, valuntil TEXT, useconfig TEXT);
CREATE TABLE pg_catalog.pg_description(objoid INT4, classoid INT4, objsubid INT4, description TEXT);
CREATE TABLE pg_catalog.pg_proc(oid INT4, proname TEXT, pronamespace INT4, proowner INT4, prolang INT4, procost FLOAT4, prorows FLOAT4, provariadic INT4, prosupport TEXT, prokind TEXT, prosecdef BOOLEAN, proleakproof BOOLEAN, proisstrict BOOLEAN, proretset BOOLEAN, provolatile TEXT, proparallel TEXT, pronargs INT2, pronargdefaults INT2, prorettype INT4, proargtypes TEXT, proallargtypes TEXT, proargmodes TEXT, proargnames TEXT, proargdefaults TEXT, protrftypes TEXT, prosrc TEXT, probin TEXT, prosqlbody TEXT, proconfig TEXT, proacl TEXT);
CREATE TABLE pg_catalog.pg_policy(oid INT4, polname TEXT, polrelid INT4, polcmd TEXT, polpermissive BOOLEAN, polroles TEXT, polqual TEXT, polwithcheck TEXT);
CREATE TABLE pg_catalog.pg_statistic_ext(oid INT4, stxrelid INT4, stxname TEXT, stxnamespace INT4, stxowner INT4, stxstattarget INT4, stxkeys TEXT, stxkind TEXT, stxexprs TEXT);
CREATE TABLE pg_catalog.pg_publication(oid INT4, pubname TEXT, pubowner INT4, puballtables BOOLEAN, pubinsert BOOLEAN, pubupdate BOOLEAN, pubdelete BOOLEAN, pubtruncate BOOLEAN, pubviaroot BOOLEAN);
CREATE TABLE pg_catalog.pg_publication_namespace(oid INT4, pnpubid INT4, pnnspid INT4);
CREATE TABLE pg_catalog.pg_publication_rel(oid INT4, prpubid INT4, prrelid INT4, prqual TEXT, prattrs TEXT);
CREATE TABLE pg_catalog.pg_inherits(inhrelid INT4, inhparent INT4, inhseqno INT4, inhdetachpending BOOLEAN);
CREATE TABLE pg_catalog.pg_collation(oid INT4, collname TEXT, collnamespace INT4, collowner INT4, collprovider TEXT, collisdeterministic BOOLEAN, collencoding INT4, collcollate TEXT, collctype TEXT, colliculocale TEXT, collversion TEXT);
CREATE TABLE pg_catalog.pg_sequence(seqrelid INT4, seqtypid INT4, seqstart INT8, seqincrement INT8, seqmax INT8, seqmin INT8, seqcache INT8, seqcycle BOOLEAN);
CREATE TABLE pg_catalog.pg_enum(oid INT4, enumtypid INT4, enumsortorder FLOAT4, enumlabel TEXT);
CREATE TABLE pg_catalog.pg_trigger(oid INT4, tgrelid INT4, tgparentid INT4, tgname TEXT, tgfoid INT4, tgtype INT2, tgenabled TEXT, tgisinternal BOOLEAN, tgconstrrelid INT4, tgconstrindid INT4, tgconstraint INT4, tgdeferrable BOOLEAN, tginitdeferred BOOLEAN, tgnargs INT2, tgattr TEXT, tgargs TEXT, tgqual TEXT, tgoldtable TEXT, tgnewtable TEXT);
CREATE TABLE pg_catalog.pg_rewrite(oid INT4, rulename TEXT, ev_class INT4, ev_type TEXT, ev_enabled TEXT, is_instead BOOLEAN, ev_qual TEXT, ev_action TEXT);
CREATE TABLE pg_catalog.pg_depend(classid INT4, objid INT4, objsubid INT4, refclassid INT4, refobjid INT4, refobjsubid INT4, deptype TEXT);
CREATE TABLE pg_catalog.pg_tablespace(oid INT4, spcname TEXT, spcowner INT4, spcacl TEXT, spcoptions TEXT);
CREATE TABLE pg_catalog.pg_extension(oid INT4, extname TEXT, extowner INT4, extnamespace INT4, extrelocatable BOOLEAN, extversion TEXT, extconfig TEXT, extcondition TEXT);
CREATE TABLE pg_catalog.pg_range(rngtypid INT4, rngsubtype INT4, rngmultitypid INT4, rngcollation INT4, rngsubopc INT4, rngcanonical TEXT, rngsubdiff TEXT);
CREATE TABLE pg_catalog.pg_language(oid INT4, lanname TEXT, lanowner INT4, lanispl BOOLEAN, lanpltrusted BOOLEAN, lanplcallfoid INT4, laninline INT4, lanvalidator INT4, lanacl TEXT);
CREATE TABLE pg_catalog.pg_operator(oid INT4, oprname TEXT, oprnamespace INT4, oprowner INT4, oprkind TEXT, oprcanmerge BOOLEAN, oprcanhash BOOLEAN, oprleft INT4, oprright INT4, oprresult INT4, oprcom INT4, oprnegate INT4, oprcode TEXT, oprrest TEXT, oprjoin TEXT);
CREATE TABLE pg_catalog.pg_cast(oid INT4, castsource INT4, casttarget INT4, castfunc INT4, castcontext TEXT, castmethod TEXT);
CREATE TABLE pg_catalog.pg_shdescription(objoid INT4, classoid INT4, description TEXT);
CREATE TABLE pg_catalog.pg_foreign_table(ftrelid INT4, ftserver INT4, ftoptions TEXT);
CREATE TABLE pg_catalog.pg_partitioned_table(partrelid INT4, partstrat TEXT, partnatts INT2, partdefid INT4, partattrs TEXT, partclass TEXT, partcollation TEXT, partexprs TEXT);
CREATE TABLE pg_catalog.pg_event_trigger(oid INT4, evtname TEXT, evtevent TEXT, evtowner INT4, evtfoid INT4, evtenabled TEXT, evttags TEXT);
CREATE TABLE pg_catalog.pg_opclass(oid INT4, opcmethod INT4, opcname TEXT, opcnamespace INT4, opcowner INT4, opcfamily INT4, opcintype INT4, opcdefault BOOLEAN, opckeytype INT4);
CREATE TABLE pg_catalog.pg_conversion(oid INT4, conname TEXT, connamespace INT4, conowner INT4, conforencoding INT4, contoencoding INT4, conproc TEXT, condefault BOOLEAN);
CREATE TABLE pg_catalog.pg_foreign_data_wrapper(oid INT4, fdwname TEXT, fdwowner INT4, fdwhandler INT4, fdwvalidator INT4, fdwacl TEXT, fdwoptions TEXT);
CREATE TABLE pg_catalog.pg_foreign_server(oid INT4, srvname TEXT, srvowner INT4, srvfdw INT4, srvtype TEXT, srvversion TEXT, srvacl TEXT, srvoptions TEXT);
CREATE TABLE pg_catalog.pg_default_acl(oid INT4, defaclrole INT4, defaclnamespace INT4, defaclobjtype TEXT, defaclacl TEXT);
CREATE TABLE pg_catalog.pg_init_privs(objoid INT4, classoid INT4, objsubid INT4, privtype TEXT, initprivs TEXT);
CREATE TABLE pg_catalog.pg_seclabel(objoid INT4, classoid INT4, objsubid INT4, provider TEXT, label TEXT);
CREATE TABLE pg_catalog.pg_auth_members(roleid INT4, member INT4, grantor INT4, admin_option BOOLEAN);
CREATE TABLE information_schema.schemata(catalog_name TEXT, schema_name TEXT, schema_owner TEXT, default_character_set_catalog TEXT, default_character_set_schema TEXT, default_character_set_name TEXT, sql_path TEXT);
CREATE TABLE information_schema.tables(table_catalog TEXT, table_schema TEXT, table_name TEXT, table_type TEXT, self_referencing_column_name TEXT, reference_generation TEXT, user_defined_type_catalog TEXT, user_defined_type_schema TEXT, user_defined_type_name TEXT, is_insertable_into TEXT, is_typed TEXT, commit_action TEXT);
CREATE TABLE information_schema.columns(table_catalog TEXT, table_schema TEXT, table_name TEXT, column_name TEXT, ordinal_position INT4, column_default TEXT, is_nullable TEXT, data_type TEXT, character_maximum_length INT4, character_octet_length INT4, numeric_precision INT4, numeric_precision_radix INT4, numeric_scale INT4, datetime_precision INT4, interval_type TEXT, interval_precision INT4, character_set_catalog TEXT, character_set_schema TEXT, character_set_name TEXT, collation_catalog TEXT, collation_schema TEXT, collation_name TEXT, domain_catalog TEXT, domain_schema TEXT, domain_name TEXT, udt_catalog TEXT, udt_schema TEXT, udt_name TEXT, scope_catalog TEXT, scope_schema TEXT, scope_name TEXT, maximum_cardinality INT4, dtd_identifier TEXT, is_self_referencing TEXT, is_identity TEXT, identity_generation TEXT, identity_start TEXT, identity_increment TEXT, identity_maximum TEXT, identity_minimum TEXT, identity_cycle TEXT, is_generated TEXT, generation_expression TEXT, is_updatable TEXT);
CREATE TABLE information_schema.views(table_catalog TEXT, table_schema TEXT, table_name TEXT, view_definition TEXT, check_option TEXT, is_updatable TEXT, is_insertable_into TEXT, is_trigger_updatable TEXT, is_trigger_deletable TEXT, is_trigger_insertable_into TEXT);
CREATE TABLE information_schema.table_constraints(constraint_catalog TEXT, constraint_schema TEXT, constraint_name TEXT, table_catalog TEXT, table_schema TEXT, table_name TEXT, constraint_type TEXT, is_deferrable TEXT, initially_deferred TEXT, enforced TEXT, nulls_distinct TEXT);
CREATE TABLE information_schema.key_column_usage(constraint_catalog TEXT, constraint_schema TEXT, constraint_name TEXT, table_catalog TEXT, table_schema TEXT, table_name TEXT, column_name TEXT, ordinal_position INT4, position_in_unique_constraint INT4);
CREATE TABLE information_schema.referential_constraints(constraint_catalog TEXT, constraint_schema TEXT, constraint_name TEXT, unique_constraint_catalog TEXT, unique_constraint_schema TEXT, unique_constraint_name TEXT, match_option TEXT, update_rule TEXT, delete_rule TEXT);
CREATE TABLE information_schema.routines(specific_catalog TEXT, specific_schema TEXT, specific_name TEXT, routine_catalog TEXT, routine_schema TEXT, routine_name TEXT, routine_type TEXT, module_catalog TEXT, module_schema TEXT, module_name TEXT, udt_catalog TEXT, udt_schema TEXT, udt_name TEXT, data_type TEXT, character_maximum_length INT4, character_octet_length INT4, character_set_catalog TEXT, character_set_schema TEXT, character_set_name TEXT, collation_catalog TEXT, collation_schema TEXT, collation_name TEXT, numeric_precision INT4, numeric_precision_radix INT4, numeric_scale INT4, datetime_precision INT4, interval_type TEXT, interval_precision INT4, type_udt_catalog TEXT, type_udt_schema TEXT, type_udt_name TEXT, scope_catalog TEXT, scope_schema TEXT, scope_name TEXT, maximum_cardinality INT4, dtd_identifier TEXT, routine_body TEXT, routine_definition TEXT, external_name TEXT, external_language TEXT, parameter_style TEXT, is_deterministic TEXT, sql_data_access TEXT, is_null_call TEXT, sql_path TEXT, schema_level_routine TEXT, max_dynamic_result_sets INT4, is_user_defined_cast TEXT, is_implicitly_invocable TEXT, security_type TEXT, to_sql_specific_catalog TEXT, to_sql_specific_schema TEXT, to_sql_specific_name TEXT, as_locator TEXT, created TEXT, last_altered TEXT, new_savepoint_level TEXT, is_udt_dependent TEXT, result_cast_from_data_type TEXT, result_cast_as_locator TEXT, result_cast_char_max_length INT4, result_cast_char_octet_length INT4, result_cast_char_set_catalog TEXT, result_cast_char_set_schema TEXT, result_cast_char_set_name TEXT, result_cast_collation_catalog TEXT, result_cast_collation_schema TEXT, result_cast_collation_name TEXT, result_cast_numeric_precision INT4, result_cast_numeric_precision_radix INT4, result_cast_numeric_scale INT4, result_cast_datetime_precision INT4, result_cast_interval_type TEXT, result_cast_interval_precision INT4, result_cast_type_udt_catalog TEXT, result_cast_type_udt_schema TEXT, result_cast_type_udt_name TEXT, result_cast_scope_catalog TEXT, result_cast_scope_schema TEXT, result_cast_scope_name TEXT, result_cast_maximum_cardinality INT4, result_cast_dtd_identifier TEXT);
CREATE TABLE information_schema.sequences(sequence_catalog TEXT, sequence_schema TEXT, sequence_name TEXT, data_type TEXT, numeric_precision INT4, numeric_precision_radix INT4, numeric_scale INT4, start_value TEXT, minimum_value TEXT, maximum_value TEXT, increment TEXT, cycle_option TEXT);
CREATE TABLE information_schema.check_constraints(constraint_catalog TEXT, constraint_schema TEXT, constraint_name TEXT, check_clause TEXT);
CREATE TABLE information_schema.constraint_column_usage(table_catalog TEXT, table_schema TEXT, table_name TEXT, column_name TEXT, constraint_catalog TEXT, constraint_schema TEXT, constraint_name TEXT);
CREATE TABLE pg_catalog.wirepool_defs(oid INTEGER PRIMARY KEY, def TEXT);
CREATE VIEW pg_catalog.pg_tables AS SELECT n.nspname AS schemaname, c.relname AS tablename, 'wirepool' AS tableowner, NULL AS tablespace, c.relhasindex AS hasindexes, c.relhasrules AS hasrules, c.relhastriggers AS hastriggers, c.relrowsecurity AS rowsecurity FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 'p');
CREATE VIEW pg_catalog.pg_views AS SELECT n.nspname AS schemaname, c.relname AS viewname, 'wirepool' AS viewowner, d.def AS definition FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace LEFT JOIN wirepool_defs d ON d.oid = c.oid WHERE c.relkind = 'v';
CREATE VIEW pg_catalog.pg_indexes AS SELECT n.nspname AS schemaname, t.relname AS tablename, c.relname AS indexname, NULL AS tablespace, d.def AS indexdef FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace LEFT JOIN wirepool_defs d ON d.oid = c.oid;
CREATE VIEW pg_catalog.pg_matviews AS SELECT NULL AS schemaname, NULL AS matviewname, NULL AS matviewowner, NULL AS tablespace, NULL AS hasindexes, NULL AS ispopulated, NULL AS definition WHERE 0;
CREATE VIEW pg_catalog.pg_sequences AS SELECT NULL AS schemaname, NULL AS sequencename, NULL AS sequenceowner, NULL AS data_type, NULL AS start_value, NULL AS min_value, NULL AS max_value, NULL AS increment_by, NULL AS cycle, NULL AS cache_size, NULL AS last_value WHERE 0;
INSERT INTO pg_catalog.pg_namespace VALUES (11, 'pg_catalog', 10, NULL), (2200, 'public', 10, NULL), (13000, 'information_schema', 10, NULL);
INSERT INTO pg_catalog.pg_am VALUES (2, 'heap', 'heap_tableam_handler', 't'), (403, 'btree', 'bthandler', 'i');
INSERT INTO pg_catalog.pg_tablespace(oid, spcname, spcowner) VALUES (1663, 'pg_default', 10);
INSERT INTO pg_catalog.pg_roles(rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, rolreplication, rolconnlimit, rolbypassrls, oid) VALUES ('wirepool', 0, 1, 0, 0, 1, 0, -1, 0, 10);
INSERT INTO pg_catalog.pg_user(usename, usesysid, usecreatedb, usesuper, userepl, usebypassrls) VALUES ('wirepool', 10, 0, 0, 0, 0);
INSERT INTO pg_catalog.pg_database(oid, datname, datdba, encoding, datlocprovider, datistemplate, datallowconn, datconnlimit, dattablespace, datcollate, datctype) VALUES (16383, 'main', 10, 6, 'c', 0, 1, -1, 1663, 'C', 'C');
INSERT INTO information_schema.schemata(catalog_name, schema_name, schema_owner) VALUES ('main', 'public', 'wirepool'), ('main', 'pg_catalog', 'wirepool'), ('main', 'information_schema', 'wirepool');
)sql";

// What the main database holds now. (Views: CREATE VIEW text; indexes: a
// PostgreSQL-style definition; constraints: PRIMARY KEY / UNIQUE / FOREIGN KEY.)
// relhastriggers is also set by foreign keys, as PostgreSQL's triggers for
// them do: psql asks for foreign keys only then.
constexpr const char* kFill = R"sql(
DELETE FROM pg_catalog.pg_class;
DELETE FROM pg_catalog.pg_attribute;
DELETE FROM pg_catalog.pg_attrdef;
DELETE FROM pg_catalog.pg_index;
DELETE FROM pg_catalog.pg_constraint;
DELETE FROM pg_catalog.wirepool_defs;
DELETE FROM information_schema.tables;
DELETE FROM information_schema.columns;
DELETE FROM information_schema.views;
DELETE FROM information_schema.table_constraints;
DELETE FROM information_schema.key_column_usage;
CREATE TEMP TABLE IF NOT EXISTS wirepool_rels(oid INTEGER PRIMARY KEY, name TEXT, type TEXT, tbl TEXT, sql TEXT);
DELETE FROM temp.wirepool_rels;
INSERT INTO temp.wirepool_rels SELECT 16384 + 4 * rowid, name, type, tbl_name, sql FROM main.sqlite_schema WHERE type IN ('table', 'view', 'index') AND name NOT LIKE 'sqlite!_%' ESCAPE '!' OR name LIKE 'sqlite!_autoindex!_%' ESCAPE '!';
CREATE TEMP TABLE IF NOT EXISTS wirepool_pk(tbl TEXT, oid INTEGER, cols TEXT, nums TEXT, names TEXT);
DELETE FROM temp.wirepool_pk;
INSERT INTO temp.wirepool_pk SELECT r.name, r.oid, (SELECT group_concat(cid + 1, ' ') FROM (SELECT cid FROM pragma_table_info(r.name, 'main') WHERE pk > 0 ORDER BY pk)), (SELECT group_concat(cid + 1, ',') FROM (SELECT cid FROM pragma_table_info(r.name, 'main') WHERE pk > 0 ORDER BY pk)), (SELECT group_concat(quote_ident(name), ', ') FROM (SELECT name FROM pragma_table_info(r.name, 'main') WHERE pk > 0 ORDER BY pk)) FROM temp.wirepool_rels r WHERE r.type = 'table' AND EXISTS (SELECT 1 FROM pragma_table_info(r.name, 'main') WHERE pk > 0);
CREATE TEMP TABLE IF NOT EXISTS wirepool_idx(oid INTEGER, tbl TEXT, tbloid INTEGER, name TEXT, isunique INTEGER, origin TEXT, partial INTEGER, nums TEXT, names TEXT, cnt INTEGER);
DELETE FROM temp.wirepool_idx;
INSERT INTO temp.wirepool_idx SELECT ri.oid, t.name, t.oid, il.name, il."unique", il.origin, il.partial, (SELECT group_concat(CASE WHEN ii.cid < 0 THEN 0 ELSE ii.cid + 1 END, ' ') FROM pragma_index_info(il.name, 'main') ii), (SELECT group_concat(coalesce(quote_ident(ii.name), '?'), ', ') FROM pragma_index_info(il.name, 'main') ii), (SELECT count(*) FROM pragma_index_info(il.name, 'main')) FROM temp.wirepool_rels t, pragma_index_list(t.name, 'main') il JOIN temp.wirepool_rels ri ON ri.name = il.name WHERE t.type = 'table' AND il.origin <> 'pk';
INSERT INTO pg_catalog.pg_class(oid, relname, relnamespace, reltype, reloftype, relowner, relam, relfilenode, reltablespace, relpages, reltuples, relallvisible, reltoastrelid, relhasindex, relisshared, relpersistence, relkind, relnatts, relchecks, relhasrules, relhastriggers, relhassubclass, relrowsecurity, relforcerowsecurity, relispopulated, relreplident, relispartition, relrewrite, relfrozenxid, relminmxid) SELECT r.oid, r.name, 2200, 0, 0, 10, CASE r.type WHEN 'table' THEN 2 WHEN 'index' THEN 403 ELSE 0 END, r.oid, 0, 0, -1, 0, 0, r.type = 'table' AND (EXISTS (SELECT 1 FROM temp.wirepool_pk p WHERE p.tbl = r.name) OR EXISTS (SELECT 1 FROM temp.wirepool_idx x WHERE x.tbl = r.name)), 0, 'p', CASE r.type WHEN 'table' THEN 'r' WHEN 'view' THEN 'v' ELSE 'i' END, CASE WHEN r.type = 'index' THEN (SELECT count(*) FROM pragma_index_info(r.name, 'main')) ELSE (SELECT count(*) FROM pragma_table_info(r.name, 'main')) END, 0, 0, EXISTS (SELECT 1 FROM main.sqlite_schema g WHERE g.type = 'trigger' AND g.tbl_name = r.name) OR (r.type = 'table' AND (EXISTS (SELECT 1 FROM pragma_foreign_key_list(r.name, 'main')) OR EXISTS (SELECT 1 FROM temp.wirepool_rels o, pragma_foreign_key_list(o.name, 'main') f WHERE o.type = 'table' AND f."table" = r.name COLLATE NOCASE))), 0, 0, 0, 1, 'd', 0, 0, 0, 0 FROM temp.wirepool_rels r WHERE r.type <> 'index' OR r.oid IN (SELECT oid FROM temp.wirepool_idx);
INSERT INTO pg_catalog.pg_class(oid, relname, relnamespace, reltype, reloftype, relowner, relam, relfilenode, reltablespace, relpages, reltuples, relallvisible, reltoastrelid, relhasindex, relisshared, relpersistence, relkind, relnatts, relchecks, relhasrules, relhastriggers, relhassubclass, relrowsecurity, relforcerowsecurity, relispopulated, relreplident, relispartition, relrewrite, relfrozenxid, relminmxid) SELECT p.oid + 1, p.tbl || '_pkey', 2200, 0, 0, 10, 403, p.oid + 1, 0, 0, -1, 0, 0, 0, 0, 'p', 'i', length(p.nums) - length(replace(p.nums, ',', '')) + 1, 0, 0, 0, 0, 0, 0, 1, 'd', 0, 0, 0, 0 FROM temp.wirepool_pk p;
INSERT INTO pg_catalog.pg_attribute(attrelid, attname, atttypid, attstattarget, attlen, attnum, attndims, attcacheoff, atttypmod, attbyval, attalign, attstorage, attcompression, attnotnull, atthasdef, atthasmissing, attidentity, attgenerated, attisdropped, attislocal, attinhcount, attcollation) SELECT r.oid, c.name, wirepool_type_oid(c.type), -1, wirepool_type_len(c.type), c.cid + 1, 0, -1, wirepool_typmod(c.type), 0, 'i', 'p', '', c."notnull" OR c.pk > 0, c.dflt_value IS NOT NULL, 0, '', CASE WHEN c.hidden IN (2, 3) THEN 's' ELSE '' END, 0, 1, 0, 0 FROM temp.wirepool_rels r, pragma_table_xinfo(r.name, 'main') c WHERE r.type IN ('table', 'view') AND c.hidden IN (0, 2, 3);
INSERT INTO pg_catalog.pg_attrdef(oid, adrelid, adnum, adbin) SELECT 1073741824 + r.oid * 2048 + c.cid, r.oid, c.cid + 1, c.dflt_value FROM temp.wirepool_rels r, pragma_table_xinfo(r.name, 'main') c WHERE r.type = 'table' AND c.dflt_value IS NOT NULL;
INSERT INTO pg_catalog.pg_index(indexrelid, indrelid, indnatts, indnkeyatts, indisunique, indnullsnotdistinct, indisprimary, indisexclusion, indimmediate, indisclustered, indisvalid, indcheckxmin, indisready, indislive, indisreplident, indkey) SELECT p.oid + 1, p.oid, length(p.nums) - length(replace(p.nums, ',', '')) + 1, length(p.nums) - length(replace(p.nums, ',', '')) + 1, 1, 0, 1, 0, 1, 0, 1, 0, 1, 1, 0, p.cols FROM temp.wirepool_pk p;
INSERT INTO pg_catalog.pg_index(indexrelid, indrelid, indnatts, indnkeyatts, indisunique, indnullsnotdistinct, indisprimary, indisexclusion, indimmediate, indisclustered, indisvalid, indcheckxmin, indisready, indislive, indisreplident, indkey, indpred) SELECT x.oid, x.tbloid, x.cnt, x.cnt, x.isunique, 0, 0, 0, 1, 0, 1, 0, 1, 1, 0, x.nums, CASE WHEN x.partial THEN '' END FROM temp.wirepool_idx x;
INSERT INTO pg_catalog.wirepool_defs SELECT p.oid + 1, 'CREATE UNIQUE INDEX ' || quote_ident(p.tbl || '_pkey') || ' ON public.' || quote_ident(p.tbl) || ' USING btree (' || p.names || ')' FROM temp.wirepool_pk p;
INSERT INTO pg_catalog.wirepool_defs SELECT x.oid, 'CREATE ' || CASE WHEN x.isunique THEN 'UNIQUE ' ELSE '' END || 'INDEX ' || quote_ident(x.name) || ' ON public.' || quote_ident(x.tbl) || ' USING btree (' || x.names || ')' FROM temp.wirepool_idx x;
INSERT INTO pg_catalog.wirepool_defs SELECT r.oid, r.sql FROM temp.wirepool_rels r WHERE r.type = 'view';
INSERT INTO pg_catalog.pg_constraint(oid, conname, connamespace, contype, condeferrable, condeferred, convalidated, conrelid, contypid, conindid, conparentid, confrelid, conislocal, coninhcount, connoinherit, conkey) SELECT p.oid + 2, p.tbl || '_pkey', 2200, 'p', 0, 0, 1, p.oid, 0, p.oid + 1, 0, 0, 1, 0, 1, '{' || p.nums || '}' FROM temp.wirepool_pk p;
INSERT INTO pg_catalog.wirepool_defs SELECT p.oid + 2, 'PRIMARY KEY (' || p.names || ')' FROM temp.wirepool_pk p;
INSERT INTO pg_catalog.pg_constraint(oid, conname, connamespace, contype, condeferrable, condeferred, convalidated, conrelid, contypid, conindid, conparentid, confrelid, conislocal, coninhcount, connoinherit, conkey) SELECT x.oid + 2, x.name, 2200, 'u', 0, 0, 1, x.tbloid, 0, x.oid, 0, 0, 1, 0, 1, '{' || replace(x.nums, ' ', ',') || '}' FROM temp.wirepool_idx x WHERE x.origin = 'u';
INSERT INTO pg_catalog.wirepool_defs SELECT x.oid + 2, 'UNIQUE (' || x.names || ')' FROM temp.wirepool_idx x WHERE x.origin = 'u';
CREATE TEMP TABLE IF NOT EXISTS wirepool_fk(oid INTEGER, tbl TEXT, tbloid INTEGER, ref TEXT, refoid INTEGER, nums TEXT, refnums TEXT, names TEXT, refnames TEXT, on_update TEXT, on_delete TEXT);
DELETE FROM temp.wirepool_fk;
INSERT INTO temp.wirepool_fk SELECT 2147483648 + r.oid * 64 + f.id, r.name, r.oid, f."table", (SELECT t.oid FROM temp.wirepool_rels t WHERE t.name = f."table" COLLATE NOCASE AND t.type = 'table'), group_concat((SELECT c.cid + 1 FROM pragma_table_info(r.name, 'main') c WHERE c.name = f."from"), ','), group_concat(coalesce((SELECT c.cid + 1 FROM pragma_table_info(f."table", 'main') c WHERE c.name = f."to"), (SELECT c.cid + 1 FROM pragma_table_info(f."table", 'main') c WHERE c.pk = f.seq + 1)), ','), group_concat(quote_ident(f."from"), ', '), group_concat(quote_ident(coalesce(f."to", (SELECT c.name FROM pragma_table_info(f."table", 'main') c WHERE c.pk = f.seq + 1))), ', '), f.on_update, f.on_delete FROM temp.wirepool_rels r, pragma_foreign_key_list(r.name, 'main') f WHERE r.type = 'table' GROUP BY r.oid, f.id;
INSERT INTO pg_catalog.pg_constraint(oid, conname, connamespace, contype, condeferrable, condeferred, convalidated, conrelid, contypid, conindid, conparentid, confrelid, confupdtype, confdeltype, confmatchtype, conislocal, coninhcount, connoinherit, conkey, confkey) SELECT k.oid, k.tbl || '_' || replace(replace(k.names, ', ', '_'), '"', '') || '_fkey', 2200, 'f', 0, 0, 1, k.tbloid, 0, 0, 0, k.refoid, CASE k.on_update WHEN 'CASCADE' THEN 'c' WHEN 'SET NULL' THEN 'n' WHEN 'SET DEFAULT' THEN 'd' WHEN 'RESTRICT' THEN 'r' ELSE 'a' END, CASE k.on_delete WHEN 'CASCADE' THEN 'c' WHEN 'SET NULL' THEN 'n' WHEN 'SET DEFAULT' THEN 'd' WHEN 'RESTRICT' THEN 'r' ELSE 'a' END, 's', 1, 0, 1, '{' || k.nums || '}', '{' || k.refnums || '}' FROM temp.wirepool_fk k;
INSERT INTO pg_catalog.wirepool_defs SELECT k.oid, 'FOREIGN KEY (' || k.names || ') REFERENCES ' || quote_ident(k.ref) || '(' || k.refnames || ')' || CASE WHEN k.on_update NOT IN ('NO ACTION', '') THEN ' ON UPDATE ' || k.on_update ELSE '' END || CASE WHEN k.on_delete NOT IN ('NO ACTION', '') THEN ' ON DELETE ' || k.on_delete ELSE '' END FROM temp.wirepool_fk k;
INSERT INTO information_schema.tables(table_catalog, table_schema, table_name, table_type, is_insertable_into, is_typed) SELECT 'main', 'public', r.name, CASE r.type WHEN 'view' THEN 'VIEW' ELSE 'BASE TABLE' END, CASE r.type WHEN 'view' THEN 'NO' ELSE 'YES' END, 'NO' FROM temp.wirepool_rels r WHERE r.type IN ('table', 'view');
INSERT INTO information_schema.views(table_catalog, table_schema, table_name, view_definition, check_option, is_updatable, is_insertable_into, is_trigger_updatable, is_trigger_deletable, is_trigger_insertable_into) SELECT 'main', 'public', r.name, r.sql, 'NONE', 'NO', 'NO', 'NO', 'NO', 'NO' FROM temp.wirepool_rels r WHERE r.type = 'view';
INSERT INTO information_schema.columns(table_catalog, table_schema, table_name, column_name, ordinal_position, column_default, is_nullable, data_type, character_maximum_length, numeric_precision, numeric_scale, udt_catalog, udt_schema, udt_name, dtd_identifier, is_self_referencing, is_identity, is_generated, is_updatable) SELECT 'main', 'public', c.relname, a.attname, a.attnum, d.adbin, CASE WHEN a.attnotnull THEN 'NO' ELSE 'YES' END, format_type(a.atttypid, NULL), CASE WHEN a.atttypid IN (1042, 1043) AND a.atttypmod > 4 THEN a.atttypmod - 4 END, CASE WHEN a.atttypid = 1700 AND a.atttypmod > 4 THEN (a.atttypmod - 4) >> 16 END, CASE WHEN a.atttypid = 1700 AND a.atttypmod > 4 THEN (a.atttypmod - 4) & 65535 END, 'main', 'pg_catalog', (SELECT t.typname FROM pg_catalog.pg_type t WHERE t.oid = a.atttypid), a.attnum, 'NO', 'NO', CASE a.attgenerated WHEN 's' THEN 'ALWAYS' ELSE 'NEVER' END, CASE c.relkind WHEN 'r' THEN 'YES' ELSE 'NO' END FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum;
INSERT INTO information_schema.table_constraints(constraint_catalog, constraint_schema, constraint_name, table_catalog, table_schema, table_name, constraint_type, is_deferrable, initially_deferred, enforced, nulls_distinct) SELECT 'main', 'public', k.conname, 'main', 'public', c.relname, CASE k.contype WHEN 'p' THEN 'PRIMARY KEY' WHEN 'u' THEN 'UNIQUE' ELSE 'FOREIGN KEY' END, 'NO', 'NO', 'YES', CASE WHEN k.contype IN ('p', 'u') THEN 'YES' END FROM pg_catalog.pg_constraint k JOIN pg_catalog.pg_class c ON c.oid = k.conrelid;
INSERT INTO information_schema.key_column_usage(constraint_catalog, constraint_schema, constraint_name, table_catalog, table_schema, table_name, column_name, ordinal_position) SELECT 'main', 'public', k.conname, 'main', 'public', c.relname, a.attname, j.key + 1 FROM pg_catalog.pg_constraint k JOIN pg_catalog.pg_class c ON c.oid = k.conrelid, json_each(pg_array_json(k.conkey)) j JOIN pg_catalog.pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = j.value;
)sql";

// ---- types --------------------------------------------------------------------

struct TypeRow {
  uint32_t oid;
  const char* name;    // typname
  const char* format;  // format_type()'s name
  int16_t len;
  char category;
  uint32_t array;  // its array type's oid
};

// Every type wirepool sends, and the reg* types the catalog queries cast to.
constexpr TypeRow kTypes[] = {
    {16, "bool", "boolean", 1, 'B', 1000},
    {17, "bytea", "bytea", -1, 'U', 1001},
    {18, "char", "\"char\"", 1, 'Z', 1002},
    {19, "name", "name", 64, 'S', 1003},
    {20, "int8", "bigint", 8, 'N', 1016},
    {21, "int2", "smallint", 2, 'N', 1005},
    {22, "int2vector", "int2vector", -1, 'A', 1006},
    {23, "int4", "integer", 4, 'N', 1007},
    {24, "regproc", "regproc", 4, 'N', 1008},
    {25, "text", "text", -1, 'S', 1009},
    {26, "oid", "oid", 4, 'N', 1028},
    {114, "json", "json", -1, 'U', 199},
    {700, "float4", "real", 4, 'N', 1021},
    {701, "float8", "double precision", 8, 'N', 1022},
    {705, "unknown", "unknown", -2, 'X', 0},
    {1042, "bpchar", "character", -1, 'S', 1014},
    {1043, "varchar", "character varying", -1, 'S', 1015},
    {1082, "date", "date", 4, 'D', 1182},
    {1083, "time", "time without time zone", 8, 'D', 1183},
    {1114, "timestamp", "timestamp without time zone", 8, 'D', 1115},
    {1184, "timestamptz", "timestamp with time zone", 8, 'D', 1185},
    {1186, "interval", "interval", 16, 'T', 1187},
    {1700, "numeric", "numeric", -1, 'N', 1231},
    {2205, "regclass", "regclass", 4, 'N', 2210},
    {2206, "regtype", "regtype", 4, 'N', 2211},
    {2950, "uuid", "uuid", 16, 'U', 2951},
    {3802, "jsonb", "jsonb", -1, 'U', 3807},
    {4089, "regnamespace", "regnamespace", 4, 'N', 4090},
};

const TypeRow* type_by_oid(int64_t oid) {
  for (const auto& t : kTypes) {
    if (t.oid == oid) return &t;
  }
  return nullptr;
}
const TypeRow* type_by_array(int64_t oid) {
  for (const auto& t : kTypes) {
    if (t.array == oid) return &t;
  }
  return nullptr;
}

std::string format_type(int64_t oid, int64_t typmod) {
  if (const TypeRow* elem = type_by_array(oid)) return format_type(elem->oid, typmod) + "[]";
  const TypeRow* t = type_by_oid(oid);
  if (!t) return "???";
  std::string out = t->format;
  if (typmod >= 4 && (oid == 1042 || oid == 1043)) {
    out += "(" + std::to_string(typmod - 4) + ")";
  } else if (typmod >= 4 && oid == 1700) {
    out += "(" + std::to_string((typmod - 4) >> 16) + "," + std::to_string((typmod - 4) & 0xffff) +
           ")";
  }
  return out;
}

int insert_types(sqlite3* db) {
  sqlite3_stmt* st = nullptr;
  int rc =
      sqlite3_prepare_v2(db,
                         "INSERT INTO pg_catalog.pg_type(oid, typname, typnamespace, typowner, "
                         "typlen, typbyval, typtype, typcategory, typispreferred, typisdefined, "
                         "typdelim, typrelid, typelem, typarray, typnotnull, typbasetype, "
                         "typtypmod, typndims, typcollation, typinput, typoutput) VALUES "
                         "(?1, ?2, 11, 10, ?3, ?3 BETWEEN 1 AND 8, 'b', ?4, 0, 1, ',', 0, ?5, "
                         "?6, 0, 0, -1, 0, 0, ?2 || 'in', ?2 || 'out')",
                         -1, &st, nullptr);
  if (rc != SQLITE_OK) return rc;
  auto add = [&](int64_t oid, const std::string& name, int len, char cat, int64_t elem,
                 int64_t array) {
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, oid);
    sqlite3_bind_text(st, 2, name.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 3, len);
    const char c[2] = {cat, 0};
    sqlite3_bind_text(st, 4, c, 1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 5, elem);
    sqlite3_bind_int64(st, 6, array);
    return sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
  };
  for (const auto& t : kTypes) {
    rc = add(t.oid, t.name, t.len, t.category, 0, t.array);
    if (rc == SQLITE_OK && t.array != 0) {
      rc = add(t.array, std::string("_") + t.name, -1, 'A', t.oid, 0);
    }
    if (rc != SQLITE_OK) break;
  }
  sqlite3_finalize(st);
  return rc;
}

// ---- PostgreSQL array text ({a,"b c",NULL}; int2vector "1 2") -------------------

std::vector<std::optional<std::string>> parse_array(std::string_view s) {
  std::vector<std::optional<std::string>> out;
  if (s.empty() || s.front() != '{') {  // int2vector / oidvector: space-separated
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && s[i] == ' ')
        ++i;
      size_t j = i;
      while (j < s.size() && s[j] != ' ')
        ++j;
      if (j > i) out.emplace_back(std::string(s.substr(i, j - i)));
      i = j;
    }
    return out;
  }
  size_t i = 1;
  while (i < s.size() && s[i] != '}') {
    std::string v;
    bool quoted = false;
    if (s[i] == '"') {
      quoted = true;
      ++i;
      while (i < s.size() && s[i] != '"') {
        if (s[i] == '\\' && i + 1 < s.size()) ++i;
        v.push_back(s[i++]);
      }
      ++i;
    } else {
      while (i < s.size() && s[i] != ',' && s[i] != '}')
        v.push_back(s[i++]);
    }
    if (!quoted && v == "NULL") {
      out.emplace_back(std::nullopt);
    } else {
      out.emplace_back(std::move(v));
    }
    if (i < s.size() && s[i] == ',') ++i;
  }
  return out;
}

std::string format_array(const std::vector<std::optional<std::string>>& items) {
  std::string out = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    if (!items[i]) {
      out += "NULL";
      continue;
    }
    const std::string& v = *items[i];
    const bool quote = v.empty() || v == "NULL" || v.find_first_of(",{}\"\\ ") != std::string::npos;
    if (!quote) {
      out += v;
      continue;
    }
    out += '"';
    for (char c : v) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

std::optional<std::string> text_arg(sqlite3_value* v) {
  if (sqlite3_value_type(v) == SQLITE_NULL) return std::nullopt;
  const auto* p = reinterpret_cast<const char*>(sqlite3_value_text(v));
  return std::string(p ? p : "", static_cast<size_t>(sqlite3_value_bytes(v)));
}

void result_text(sqlite3_context* ctx, const std::string& s) {
  sqlite3_result_text(ctx, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
}

bool is_integer(std::string_view s) {
  if (s.empty()) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return true;
}

void array_json(sqlite3_context* ctx, int, sqlite3_value** argv) {
  auto a = text_arg(argv[0]);
  if (!a) return sqlite3_result_null(ctx);
  std::string out = "[";
  bool first = true;
  for (const auto& item : parse_array(*a)) {
    if (!first) out += ',';
    first = false;
    if (!item) {
      out += "null";
    } else if (is_integer(*item)) {
      out += *item;
    } else {
      out += '"';
      for (char c : *item) {
        if (c == '"' || c == '\\') out += '\\';
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          snprintf(buf, sizeof buf, "u%04x", c);
          out += '\\';
          out += buf;
          continue;
        }
        out += c;
      }
      out += '"';
    }
  }
  result_text(ctx, out + "]");
}

void array_to_string(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  auto a = text_arg(argv[0]);
  auto sep = text_arg(argv[1]);
  if (!a || !sep) return sqlite3_result_null(ctx);
  auto null_text = argc > 2 ? text_arg(argv[2]) : std::nullopt;
  std::string out;
  bool first = true;
  for (const auto& item : parse_array(*a)) {
    if (!item && !null_text) continue;
    if (!first) out += *sep;
    first = false;
    out += item ? *item : *null_text;
  }
  result_text(ctx, out);
}

/// array_upper(a, 1), array_length(a, 1), cardinality(a): NULL for an empty array.
void array_upper(sqlite3_context* ctx, int, sqlite3_value** argv) {
  auto a = text_arg(argv[0]);
  if (!a) return sqlite3_result_null(ctx);
  const auto n = parse_array(*a).size();
  if (n == 0) return sqlite3_result_null(ctx);
  // int2vector subscripts start at 0 in PostgreSQL
  const bool vector = a->empty() || a->front() != '{';
  const bool upper = sqlite3_user_data(ctx) != nullptr;
  sqlite3_result_int64(ctx, static_cast<sqlite3_int64>(upper && vector ? n - 1 : n));
}

void array_get(sqlite3_context* ctx, int, sqlite3_value** argv) {
  auto a = text_arg(argv[0]);
  if (!a || sqlite3_value_type(argv[1]) == SQLITE_NULL) return sqlite3_result_null(ctx);
  const auto items = parse_array(*a);
  const int64_t base = a->empty() || a->front() != '{' ? 0 : 1;
  const int64_t i = sqlite3_value_int64(argv[1]) - base;
  if (i < 0 || i >= static_cast<int64_t>(items.size()) || !items[static_cast<size_t>(i)]) {
    return sqlite3_result_null(ctx);
  }
  const std::string& v = *items[static_cast<size_t>(i)];
  if (is_integer(v)) return sqlite3_result_int64(ctx, std::stoll(v));
  result_text(ctx, v);
}

void array_make(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  std::vector<std::optional<std::string>> items;
  for (int i = 0; i < argc; ++i)
    items.push_back(text_arg(argv[i]));
  result_text(ctx, format_array(items));
}

struct Agg {
  std::vector<std::optional<std::string>> items;
  std::string text;
  bool any = false;
};
Agg* agg(sqlite3_context* ctx, bool create) {
  auto** slot = static_cast<Agg**>(sqlite3_aggregate_context(ctx, create ? sizeof(Agg*) : 0));
  if (!slot) return nullptr;
  if (!*slot && create) *slot = new Agg;
  return *slot;
}
void array_agg_step(sqlite3_context* ctx, int, sqlite3_value** argv) {
  if (Agg* a = agg(ctx, true)) a->items.push_back(text_arg(argv[0]));
}
void array_agg_final(sqlite3_context* ctx) {
  std::unique_ptr<Agg> a(agg(ctx, false));
  if (!a) return sqlite3_result_null(ctx);
  result_text(ctx, format_array(a->items));
}
void string_agg_step(sqlite3_context* ctx, int, sqlite3_value** argv) {
  auto v = text_arg(argv[0]);
  if (!v) return;
  Agg* a = agg(ctx, true);
  if (!a) return;
  if (a->any) a->text += text_arg(argv[1]).value_or("");
  a->any = true;
  a->text += *v;
}
void string_agg_final(sqlite3_context* ctx) {
  std::unique_ptr<Agg> a(agg(ctx, false));
  if (!a || !a->any) return sqlite3_result_null(ctx);
  result_text(ctx, a->text);
}

// ---- regexp, conversions, catalog functions -----------------------------------

/// X REGEXP Y calls regexp(Y, X): ECMAScript syntax, which covers the patterns
/// psql builds ('^(name)$'); a "(?i)" prefix (from ~*) ignores case.
void regexp(sqlite3_context* ctx, int, sqlite3_value** argv) {
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL) {
    return sqlite3_result_null(ctx);
  }
  auto* re = static_cast<std::regex*>(sqlite3_get_auxdata(ctx, 0));
  if (!re) {
    std::string pattern = *text_arg(argv[0]);
    auto flags = std::regex::ECMAScript;
    if (pattern.rfind("(?i)", 0) == 0) {
      pattern.erase(0, 4);
      flags |= std::regex::icase;
    }
    try {
      re = new std::regex(pattern, flags);
    } catch (const std::regex_error& e) {
      return sqlite3_result_error(ctx, "invalid regular expression", -1);
    }
    sqlite3_set_auxdata(ctx, 0, re, [](void* p) { delete static_cast<std::regex*>(p); });
    re = static_cast<std::regex*>(sqlite3_get_auxdata(ctx, 0));
    if (!re) return sqlite3_result_error_nomem(ctx);
  }
  const std::string subject = *text_arg(argv[1]);
  sqlite3_result_int(ctx, std::regex_search(subject, *re) ? 1 : 0);
}

void constant_true(sqlite3_context* ctx, int, sqlite3_value**) {
  sqlite3_result_int(ctx, 1);
}
void constant_false(sqlite3_context* ctx, int, sqlite3_value**) {
  sqlite3_result_int(ctx, 0);
}
void constant_null(sqlite3_context* ctx, int, sqlite3_value**) {
  sqlite3_result_null(ctx);
}
void first_arg(sqlite3_context* ctx, int, sqlite3_value** argv) {
  sqlite3_result_value(ctx, argv[0]);
}
void role_name(sqlite3_context* ctx, int, sqlite3_value** argv) {
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return sqlite3_result_null(ctx);
  sqlite3_result_text(ctx, kRole, -1, SQLITE_STATIC);
}
void encoding_name(sqlite3_context* ctx, int, sqlite3_value**) {
  sqlite3_result_text(ctx, "UTF8", -1, SQLITE_STATIC);
}

void format_type_fn(sqlite3_context* ctx, int, sqlite3_value** argv) {
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return sqlite3_result_null(ctx);
  const int64_t typmod =
      sqlite3_value_type(argv[1]) == SQLITE_NULL ? -1 : sqlite3_value_int64(argv[1]);
  result_text(ctx, format_type(sqlite3_value_int64(argv[0]), typmod));
}

/// A value looked up by one key with `sql` (?1) on the connection.
void lookup(sqlite3_context* ctx, const char* sql, sqlite3_value* key) {
  sqlite3* db = sqlite3_context_db_handle(ctx);
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK) {
    return sqlite3_result_error(ctx, sqlite3_errmsg(db), -1);
  }
  sqlite3_bind_value(st, 1, key);
  if (sqlite3_step(st) == SQLITE_ROW) {
    sqlite3_result_value(ctx, sqlite3_column_value(st, 0));
  } else {
    sqlite3_result_null(ctx);
  }
  sqlite3_finalize(st);
}

void definition(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  if (argc >= 2 && sqlite3_user_data(ctx) != nullptr && sqlite3_value_int64(argv[1]) != 0) {
    return sqlite3_result_null(ctx);  // pg_get_indexdef(oid, column, ...): one column's text
  }
  lookup(ctx, "SELECT def FROM pg_catalog.wirepool_defs WHERE oid = ?1", argv[0]);
}

/// An identifier without its quotes and a "public." / "pg_catalog." schema.
std::string object_name(std::string s) {
  for (const char* schema : {"public.", "pg_catalog.", "\"public\".", "\"pg_catalog\"."}) {
    if (s.rfind(schema, 0) == 0) s.erase(0, std::strlen(schema));
  }
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  }
  return s;
}

/// x::regclass: an oid reads as the relation's name, a name as its oid.
void regclass(sqlite3_context* ctx, int, sqlite3_value** argv) {
  const int type = sqlite3_value_type(argv[0]);
  if (type == SQLITE_NULL) return sqlite3_result_null(ctx);
  if (type == SQLITE_INTEGER) {
    return lookup(ctx, "SELECT relname FROM pg_catalog.pg_class WHERE oid = ?1", argv[0]);
  }
  const std::string name = object_name(*text_arg(argv[0]));
  if (is_integer(name)) return sqlite3_result_int64(ctx, std::stoll(name));  // '16386'::regclass
  sqlite3* db = sqlite3_context_db_handle(ctx);
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db,
                         "SELECT oid FROM pg_catalog.pg_class WHERE relname = ?1 ORDER BY "
                         "relname = ?1 COLLATE BINARY DESC",
                         -1, &st, nullptr) != SQLITE_OK) {
    return sqlite3_result_error(ctx, sqlite3_errmsg(db), -1);
  }
  sqlite3_bind_text(st, 1, name.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(st) == SQLITE_ROW) {
    sqlite3_result_int64(ctx, sqlite3_column_int64(st, 0));
  } else {
    const std::string msg = "relation \"" + name + "\" does not exist";
    sqlite3_result_error(ctx, msg.c_str(), -1);
  }
  sqlite3_finalize(st);
}

void regtype(sqlite3_context* ctx, int, sqlite3_value** argv) {
  const int type = sqlite3_value_type(argv[0]);
  if (type == SQLITE_NULL) return sqlite3_result_null(ctx);
  if (type == SQLITE_INTEGER)
    return result_text(ctx, format_type(sqlite3_value_int64(argv[0]), -1));
  const std::string name = object_name(*text_arg(argv[0]));
  if (is_integer(name)) return sqlite3_result_int64(ctx, std::stoll(name));
  for (const auto& t : kTypes) {
    if (name == t.name || name == t.format) return sqlite3_result_int64(ctx, t.oid);
  }
  const std::string msg = "type \"" + name + "\" does not exist";
  sqlite3_result_error(ctx, msg.c_str(), -1);
}

void regnamespace(sqlite3_context* ctx, int, sqlite3_value** argv) {
  const int type = sqlite3_value_type(argv[0]);
  if (type == SQLITE_NULL) return sqlite3_result_null(ctx);
  if (type == SQLITE_INTEGER) {
    return lookup(ctx, "SELECT nspname FROM pg_catalog.pg_namespace WHERE oid = ?1", argv[0]);
  }
  lookup(ctx, "SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = ?1", argv[0]);
}

void regproc(sqlite3_context* ctx, int, sqlite3_value** argv) {
  if (sqlite3_value_type(argv[0]) == SQLITE_INTEGER && sqlite3_value_int64(argv[0]) == 0) {
    return sqlite3_result_text(ctx, "-", 1, SQLITE_STATIC);
  }
  sqlite3_result_value(ctx, argv[0]);
}

void regrole(sqlite3_context* ctx, int, sqlite3_value** argv) {
  const int type = sqlite3_value_type(argv[0]);
  if (type == SQLITE_NULL) return sqlite3_result_null(ctx);
  if (type == SQLITE_INTEGER) return sqlite3_result_text(ctx, kRole, -1, SQLITE_STATIC);
  sqlite3_result_int64(ctx, kOwner);
}

/// x::bool: PostgreSQL's boolean input forms.
void to_bool(sqlite3_context* ctx, int, sqlite3_value** argv) {
  switch (sqlite3_value_type(argv[0])) {
    case SQLITE_NULL:
      return sqlite3_result_null(ctx);
    case SQLITE_INTEGER:
    case SQLITE_FLOAT:
      return sqlite3_result_int(ctx, sqlite3_value_double(argv[0]) != 0);
    default:
      break;
  }
  std::string s = *text_arg(argv[0]);
  while (!s.empty() && s.back() == ' ')
    s.pop_back();
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  }
  for (const char* t : {"t", "true", "y", "yes", "on", "1"}) {
    if (s == t) return sqlite3_result_int(ctx, 1);
  }
  for (const char* f : {"f", "false", "n", "no", "off", "0"}) {
    if (s == f) return sqlite3_result_int(ctx, 0);
  }
  const std::string msg = "invalid input syntax for type boolean: \"" + s + "\"";
  sqlite3_result_error(ctx, msg.c_str(), -1);
}

/// x::bytea: '\x0a0b' (hex) to a blob; other text as its bytes.
void to_bytea(sqlite3_context* ctx, int, sqlite3_value** argv) {
  if (sqlite3_value_type(argv[0]) != SQLITE_TEXT) return sqlite3_result_value(ctx, argv[0]);
  const std::string s = *text_arg(argv[0]);
  if (s.rfind("\\x", 0) != 0)
    return sqlite3_result_blob(ctx, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
  std::string out;
  auto hex = [](char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
  };
  for (size_t i = 2; i + 1 < s.size(); i += 2) {
    const int hi = hex(s[i]), lo = hex(s[i + 1]);
    if (hi < 0 || lo < 0) return sqlite3_result_error(ctx, "invalid hexadecimal data", -1);
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  sqlite3_result_blob(ctx, out.data(), static_cast<int>(out.size()), SQLITE_TRANSIENT);
}

/// PostgreSQL's quote_ident(): quotes unless lower-case letters, digits and _.
void quote_ident(sqlite3_context* ctx, int, sqlite3_value** argv) {
  auto s = text_arg(argv[0]);
  if (!s) return sqlite3_result_null(ctx);
  bool plain = !s->empty() && !((*s)[0] >= '0' && (*s)[0] <= '9');
  for (char c : *s)
    plain = plain && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_');
  if (plain) return result_text(ctx, *s);
  std::string out = "\"";
  for (char c : *s) {
    if (c == '"') out += '"';
    out += c;
  }
  result_text(ctx, out + "\"");
}

/// A declared type "pgtype_<typname>[(n)]" / "pgtype_numeric(p,s)": that PostgreSQL
/// type, as the catalog of another backend's mirror declares its columns
/// (backends/catalog/catalog_connection.cpp).
std::optional<pg::WireType> pg_declared_type(std::string_view decl) {
  // (not "pg_...": the driver refreshes the catalog before a statement naming pg_)
  constexpr std::string_view kPrefix = "pgtype_";
  if (decl.size() <= kPrefix.size() || decl.substr(0, kPrefix.size()) != kPrefix) {
    return std::nullopt;
  }
  const size_t open = decl.find('(');
  const std::string_view name = decl.substr(
      kPrefix.size(), open == std::string_view::npos ? decl.npos : open - kPrefix.size());
  for (const auto& t : kTypes) {
    if (name != t.name) continue;
    int32_t typmod = -1;
    if (open != std::string_view::npos) {
      int p = -1, s = 0;
      if (std::sscanf(std::string(decl.substr(open)).c_str(), "(%d,%d)", &p, &s) >= 1 && p >= 0) {
        typmod = t.oid == pg::oid::kNumeric ? ((p << 16) | s) + 4 : p + 4;
      }
    }
    return pg::WireType{t.oid, t.len, typmod};
  }
  return std::nullopt;
}

/// The PostgreSQL type, typmod and length wirepool sends for a declared SQLite type.
pg::WireType wire_type(sqlite3_value* decl) {
  auto text = text_arg(decl);
  if (text) {
    if (auto w = pg_declared_type(*text)) return *w;
  }
  const DeclaredType t = parse_declared_type(text ? *text : "");
  if (t.decl == Decl::blob) return {pg::oid::kBytea, -1, -1};
  // VARCHAR(n) / CHAR(n): varchar / bpchar with the declared length, as the
  // driver describes their columns (pg::wire_type_for).
  db::Column c;
  c.kind = declared_kind(t.decl);
  c.native = t.native;
  return pg::wire_type_for(c);
}
void type_oid(sqlite3_context* ctx, int, sqlite3_value** argv) {
  sqlite3_result_int64(ctx, wire_type(argv[0]).oid);
}
void type_len(sqlite3_context* ctx, int, sqlite3_value** argv) {
  sqlite3_result_int64(ctx, wire_type(argv[0]).size);
}
void type_mod(sqlite3_context* ctx, int, sqlite3_value** argv) {
  sqlite3_result_int64(ctx, wire_type(argv[0]).modifier);
}

// ---- generate_series(start, stop [, step]) ------------------------------------

struct SeriesCursor {
  sqlite3_vtab_cursor base;
  int64_t value = 0, stop = 0, step = 1, rowid = 0;
};

int series_connect(sqlite3* db, void*, int, const char* const*, sqlite3_vtab** out, char**) {
  const int rc = sqlite3_declare_vtab(
      db, "CREATE TABLE x(generate_series, start HIDDEN, stop HIDDEN, step HIDDEN)");
  if (rc != SQLITE_OK) return rc;
  *out = static_cast<sqlite3_vtab*>(sqlite3_malloc(sizeof(sqlite3_vtab)));
  if (!*out) return SQLITE_NOMEM;
  std::memset(*out, 0, sizeof(sqlite3_vtab));
  return SQLITE_OK;
}
int series_disconnect(sqlite3_vtab* vtab) {
  sqlite3_free(vtab);
  return SQLITE_OK;
}
int series_best_index(sqlite3_vtab*, sqlite3_index_info* info) {
  int seen = 0;
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    if (c.iColumn < 1 || c.op != SQLITE_INDEX_CONSTRAINT_EQ) continue;
    if (!c.usable) return SQLITE_CONSTRAINT;
    info->aConstraintUsage[i].argvIndex = c.iColumn;
    info->aConstraintUsage[i].omit = 1;
    seen |= 1 << (c.iColumn - 1);
  }
  if ((seen & 3) != 3) return SQLITE_CONSTRAINT;  // start and stop are required
  info->idxNum = seen;
  info->estimatedCost = 10;
  return SQLITE_OK;
}
int series_open(sqlite3_vtab*, sqlite3_vtab_cursor** out) {
  auto* c = new (std::nothrow) SeriesCursor{};
  if (!c) return SQLITE_NOMEM;
  *out = &c->base;
  return SQLITE_OK;
}
int series_close(sqlite3_vtab_cursor* cur) {
  delete reinterpret_cast<SeriesCursor*>(cur);
  return SQLITE_OK;
}
int series_filter(sqlite3_vtab_cursor* cur, int idx, const char*, int argc, sqlite3_value** argv) {
  auto* c = reinterpret_cast<SeriesCursor*>(cur);
  c->value = argc > 0 ? sqlite3_value_int64(argv[0]) : 0;
  c->stop = argc > 1 ? sqlite3_value_int64(argv[1]) : -1;
  c->step = (idx & 4) && argc > 2 ? sqlite3_value_int64(argv[2]) : 1;
  if (c->step == 0) c->step = 1;
  if (argc > 1 &&
      (sqlite3_value_type(argv[0]) == SQLITE_NULL || sqlite3_value_type(argv[1]) == SQLITE_NULL)) {
    c->value = 1;
    c->stop = 0;
    c->step = 1;
  }
  c->rowid = 1;
  return SQLITE_OK;
}
int series_next(sqlite3_vtab_cursor* cur) {
  auto* c = reinterpret_cast<SeriesCursor*>(cur);
  c->value += c->step;
  ++c->rowid;
  return SQLITE_OK;
}
int series_eof(sqlite3_vtab_cursor* cur) {
  auto* c = reinterpret_cast<SeriesCursor*>(cur);
  return c->step > 0 ? c->value > c->stop : c->value < c->stop;
}
int series_column(sqlite3_vtab_cursor* cur, sqlite3_context* ctx, int) {
  sqlite3_result_int64(ctx, reinterpret_cast<SeriesCursor*>(cur)->value);
  return SQLITE_OK;
}
int series_rowid(sqlite3_vtab_cursor* cur, sqlite3_int64* rowid) {
  *rowid = reinterpret_cast<SeriesCursor*>(cur)->rowid;
  return SQLITE_OK;
}

sqlite3_module series_module() {
  sqlite3_module m{};
  m.xConnect = series_connect;
  m.xBestIndex = series_best_index;
  m.xDisconnect = series_disconnect;
  m.xOpen = series_open;
  m.xClose = series_close;
  m.xFilter = series_filter;
  m.xNext = series_next;
  m.xEof = series_eof;
  m.xColumn = series_column;
  m.xRowid = series_rowid;
  return m;
}

int register_functions(sqlite3* db) {
  using Fn = void (*)(sqlite3_context*, int, sqlite3_value**);
  struct Def {
    const char* name;
    int args;
    Fn fn;
    void* data = nullptr;
  };
  static int upper_marker = 0;
  const Def defs[] = {
      {"regexp", 2, regexp},
      {"pg_table_is_visible", 1, constant_true},
      {"pg_type_is_visible", 1, constant_true},
      {"pg_function_is_visible", 1, constant_true},
      {"has_table_privilege", -1, constant_true},
      {"has_schema_privilege", -1, constant_true},
      {"has_database_privilege", -1, constant_true},
      {"has_column_privilege", -1, constant_true},
      {"pg_relation_is_publishable", 1, constant_false},
      {"pg_get_userbyid", 1, role_name},
      {"pg_encoding_to_char", 1, encoding_name},
      {"format_type", 2, format_type_fn},
      {"pg_get_expr", 2, first_arg},
      {"pg_get_expr", 3, first_arg},
      {"pg_get_indexdef", 1, definition},
      {"pg_get_indexdef", 3, definition, &upper_marker},
      {"pg_get_constraintdef", 1, definition},
      {"pg_get_constraintdef", 2, definition},
      {"pg_get_viewdef", 1, definition},
      {"pg_get_viewdef", 2, definition},
      {"pg_get_statisticsobjdef_columns", 1, constant_null},
      {"pg_partition_ancestors", 1, constant_null},  // as a scalar: no partitions
      {"pg_get_serial_sequence", 2, constant_null},
      {"pg_get_function_result", 1, constant_null},
      {"pg_get_function_arguments", 1, constant_null},
      {"pg_get_function_identity_arguments", 1, constant_null},
      {"pg_get_triggerdef", -1, constant_null},
      {"pg_get_ruledef", -1, constant_null},
      {"obj_description", -1, constant_null},
      {"col_description", 2, constant_null},
      {"shobj_description", 2, constant_null},
      {"array_to_string", 2, array_to_string},
      {"array_to_string", 3, array_to_string},
      {"array_upper", 2, array_upper, &upper_marker},
      {"array_length", 2, array_upper},
      {"cardinality", 1, array_upper},
      {"pg_array_json", 1, array_json},
      {"pg_array_get", 2, array_get},
      {"pg_array", -1, array_make},
      {"pg_bool", 1, to_bool},
      {"pg_bytea", 1, to_bytea},
      {"pg_regclass", 1, regclass},
      {"pg_regtype", 1, regtype},
      {"pg_regnamespace", 1, regnamespace},
      {"pg_regproc", 1, regproc},
      {"pg_regrole", 1, regrole},
      {"quote_ident", 1, quote_ident},
      {"wirepool_type_oid", 1, type_oid},
      {"wirepool_type_len", 1, type_len},
      {"wirepool_typmod", 1, type_mod},
  };
  for (const Def& d : defs) {
    const int rc = sqlite3_create_function_v2(db, d.name, d.args, SQLITE_UTF8, d.data, d.fn,
                                              nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) return rc;
  }
  int rc = sqlite3_create_function_v2(db, "pg_array_agg", 1, SQLITE_UTF8, nullptr, nullptr,
                                      array_agg_step, array_agg_final, nullptr);
  if (rc == SQLITE_OK) {
    rc = sqlite3_create_function_v2(db, "array_agg", 1, SQLITE_UTF8, nullptr, nullptr,
                                    array_agg_step, array_agg_final, nullptr);
  }
  if (rc == SQLITE_OK) {
    rc = sqlite3_create_function_v2(db, "string_agg", 2, SQLITE_UTF8, nullptr, nullptr,
                                    string_agg_step, string_agg_final, nullptr);
  }
  static const sqlite3_module series = series_module();
  if (rc == SQLITE_OK) rc = sqlite3_create_module(db, "generate_series", &series, nullptr);
  return rc;
}

int exec(sqlite3* db, const char* sql) {
  return sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
}

}  // namespace

int attach_catalog(sqlite3* db, Catalog& catalog) {
  int rc = register_functions(db);
  if (rc != SQLITE_OK) return rc;
  rc = exec(db, "ATTACH ':memory:' AS pg_catalog; ATTACH ':memory:' AS information_schema");
  if (rc != SQLITE_OK) return rc;
  rc = exec(db, kTables);
  if (rc == SQLITE_OK) rc = insert_types(db);
  if (rc != SQLITE_OK) return rc;
  catalog.attached = true;
  return SQLITE_OK;
}

// Both names hold a '_': memchr finds the candidates, most statements have none.
bool mentions_catalog(std::string_view sql) {
  const char* s = sql.data();
  const size_t n = sql.size();
  for (const void* q = std::memchr(s, '_', n); q != nullptr;) {
    const size_t k = static_cast<size_t>(static_cast<const char*>(q) - s);
    if (k >= 2 && (s[k - 2] | 0x20) == 'p' && (s[k - 1] | 0x20) == 'g') return true;
    if (k >= 11 && n - k >= 7 && sqlite3_strnicmp(s + k - 11, "information_schema", 18) == 0) {
      return true;
    }
    q = k + 1 < n ? std::memchr(s + k + 1, '_', n - k - 1) : nullptr;
  }
  return false;
}

int refresh_catalog(sqlite3* db, Catalog& catalog) {
  if (!catalog.attached) return SQLITE_OK;
  sqlite3_stmt* st = nullptr;
  int rc = sqlite3_prepare_v2(db, "PRAGMA main.schema_version", -1, &st, nullptr);
  if (rc != SQLITE_OK) return rc;
  int64_t version = -1;
  if (sqlite3_step(st) == SQLITE_ROW) version = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  if (version == catalog.filled_version && !catalog.filled_in_tx) return SQLITE_OK;
  // In a transaction the fill is part of it: a ROLLBACK undoes it, so it is
  // repeated until one happens outside a transaction.
  const bool in_tx = sqlite3_get_autocommit(db) == 0;
  if (!in_tx) rc = exec(db, "SAVEPOINT wirepool_catalog");
  if (rc != SQLITE_OK) return rc;
  rc = exec(db, kFill);
  if (!in_tx) {
    const int end =
        exec(db, rc == SQLITE_OK ? "RELEASE wirepool_catalog"
                                 : "ROLLBACK TO wirepool_catalog; RELEASE wirepool_catalog");
    if (rc == SQLITE_OK) rc = end;
  }
  if (rc != SQLITE_OK) return rc;
  catalog.filled_version = version;
  catalog.filled_in_tx = in_tx;
  return SQLITE_OK;
}

}  // namespace wirepool::sqlite

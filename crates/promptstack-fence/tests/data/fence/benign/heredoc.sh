#!/usr/bin/env bash
set -euo pipefail

cat <<EOF2
Deploying $SERVICE to $ENV
EOF2

cat <<-'TEMPLATE' > /etc/app/config.ini
	[server]
	port = 8080
	TEMPLATE

wc -l <<< "$(git log --oneline)"
psql "$DATABASE_URL" <<SQL
SELECT count(*) FROM users WHERE created_at > now() - interval '1 day';
SQL
diff <(sort a.txt) <(sort b.txt) >> report.log 2>&1

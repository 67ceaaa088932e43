#!/bin/sh
exec 3>&1 4>&2 >>/var/log/backup.log 2>&1
tar -czf - /srv/data | ssh backup@host 'cat > /backups/data.tgz'
while read -r line; do echo "$line"; done < input.txt
cmd 2>&1 | tee -a out.log >/dev/null
echo $(( 1 << 10 )) $(( 4096 >> 2 ))
[ "$a" \< "$b" ] && echo less

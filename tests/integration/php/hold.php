<?php
// Holds its worker: leaves MARK_DIR/started-ID, waits for the test's
// go-ahead (MARK_DIR/release-ID, at most 20 s), leaves MARK_DIR/done-ID and
// answers "late ID".
$id = preg_replace('/[^a-z0-9-]/', '', $_GET['id'] ?? '');
$dir = getenv('MARK_DIR');
touch("$dir/started-$id");
for ($i = 0; $i < 2000 && !file_exists("$dir/release-$id"); $i++) usleep(10000);
touch("$dir/done-$id");
echo "late $id\n";

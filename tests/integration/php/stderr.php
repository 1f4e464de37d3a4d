<?php
// error_log() with no error_log file set: PHP-FPM sends it as FastCGI stderr.
error_log('marker ' . ($_GET['m'] ?? ''));
echo "logged\n";

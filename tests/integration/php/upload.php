<?php
// The uploaded file "file" as PHP saw it: error code, size, md5.
$f = $_FILES['file'] ?? null;
if ($f === null) { http_response_code(400); echo "no file\n"; exit; }
echo $f['error'], ' ', $f['size'], ' ', $f['error'] === UPLOAD_ERR_OK ? md5_file($f['tmp_name']) : '-';

<?php
// Echoes ?v=, after ?ms= milliseconds when given (to make requests overlap).
if (isset($_GET['ms'])) usleep((int)$_GET['ms'] * 1000);
echo $_GET['v'] ?? '';

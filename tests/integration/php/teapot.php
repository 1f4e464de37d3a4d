<?php
http_response_code(418);
echo "short and stout\n";

L:
	movl	%r14d, %edi
	andl	$0xfff, %edi
	cmpq	%rsi, %rdi
	jae	L
	cmpq	%r8, %rdi
	jae	L
	cmpq	%rcx, %rdi
	jae	L
	incq	%r14
	shll	$0x2, %edi
	movl	(%r10,%rdi), %r15d
	movl	(%r11,%rdi), %edi
	imulq	%rdi, %r15
	addq	(%r9), %r15
	movq	%r15, (%r9)
	addq	%rdi, 0x8(%r9)
	addq	%r15, %rax
	movq	%r15, 0x8(%rsp)
	cmpq	%r14, %rdx
	jne	L
